//! Finds the line and column of the value a JSON pointer names, in the
//! original text, so that errors found on the parsed value can still point
//! into the file. A small scanner: it only skips values, never builds them.

/// 1-based (line, column in characters) of the value at `pointer`, or `None`
/// if the text or the pointer does not lead anywhere.
pub fn position(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let tokens: Vec<String> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer
            .strip_prefix('/')?
            .split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect()
    };
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    for tok in &tokens {
        match s.peek()? {
            b'{' => {
                s.i += 1;
                loop {
                    s.ws();
                    if s.peek()? == b'}' {
                        return None;
                    }
                    let key = s.string()?;
                    s.ws();
                    if s.peek()? != b':' {
                        return None;
                    }
                    s.i += 1;
                    s.ws();
                    if &key == tok {
                        break;
                    }
                    s.skip_value()?;
                    s.ws();
                    if s.peek()? == b',' {
                        s.i += 1;
                    }
                }
            }
            b'[' => {
                let want: usize = tok.parse().ok()?;
                s.i += 1;
                for _ in 0..want {
                    s.ws();
                    s.skip_value()?;
                    s.ws();
                    if s.peek()? != b',' {
                        return None;
                    }
                    s.i += 1;
                }
                s.ws();
            }
            _ => return None,
        }
    }
    let before = &text[..s.i.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Some((line, col))
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.skip_string()?;
        serde_json::from_slice(&self.b[start..self.i]).ok()
    }

    fn skip_string(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.i += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.skip_string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.i += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::position;

    #[test]
    fn finds_nested_values() {
        let text = "[\n  {\"name\": \"a\",\n   \"parameters\": {\"type\": \"object\", \"x\": [1, {\"k\": 2}]}}\n]";
        assert_eq!(position(text, ""), Some((1, 1)));
        assert_eq!(position(text, "/0"), Some((2, 3)));
        assert_eq!(position(text, "/0/name"), Some((2, 12)));
        assert_eq!(position(text, "/0/parameters/type"), Some((3, 27)));
        assert_eq!(position(text, "/0/parameters/x/1/k"), Some((3, 52)));
        assert_eq!(position(text, "/0/missing"), None);
        assert_eq!(position(text, "/3"), None);
    }
}
