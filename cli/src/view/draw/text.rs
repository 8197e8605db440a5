//! Text for DOT: byte sets as edge labels show them, labels cut to a
//! length, and DOT's quoting of IDs and labels.

/// One byte as an edge label shows it.
fn show_byte(b: u8) -> String {
    match b {
        b' ' => "' '".into(),
        b'\t' => "\\t".into(),
        b'\n' => "\\n".into(),
        b'\r' => "\\r".into(),
        0x21..=0x7E => (b as char).to_string(),
        _ => format!("\\x{b:02x}"),
    }
}

/// Sorted bytes as ranges: `a-z 0-9 _`.
fn ranges(bytes: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let mut j = i;
        while j + 1 < bytes.len() && bytes[j + 1] == bytes[j] + 1 {
            j += 1;
        }
        match j - i {
            0 => parts.push(show_byte(bytes[i])),
            1 => {
                parts.push(show_byte(bytes[i]));
                parts.push(show_byte(bytes[j]));
            }
            _ => parts.push(format!("{}-{}", show_byte(bytes[i]), show_byte(bytes[j]))),
        }
        i = j + 1;
    }
    parts.join(" ")
}

/// A set of bytes, compactly: ranges, or "ASCII but ..." for most of
/// ASCII; bytes above ASCII (UTF-8 lead and continuation bytes) in hex.
pub(super) fn byte_set(set: &[bool; 256]) -> String {
    let ascii: Vec<u8> = (0..128u8).filter(|&b| set[b as usize]).collect();
    let high: Vec<u8> = (128..=255u8).filter(|&b| set[b as usize]).collect();
    let mut parts = Vec::new();
    if ascii.len() > 64 {
        let rest: Vec<u8> = (0..128u8).filter(|&b| !set[b as usize]).collect();
        parts.push(if rest.is_empty() {
            "any ASCII".to_string()
        } else {
            format!("ASCII but {}", ranges(&rest))
        });
    } else if !ascii.is_empty() {
        parts.push(ranges(&ascii));
    }
    if !high.is_empty() {
        parts.push(ranges(&high));
    }
    parts.join(" ")
}

/// `s` cut to `max` characters, with an ellipsis when cut.
pub(super) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Text escaped for a DOT quoted string: `\` and `"` (and a newline, as a
/// line break).
fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// A quoted DOT ID.
pub(super) fn dot_id(s: &str) -> String {
    format!("\"{}\"", dot_escape(s))
}

/// A quoted label of centred lines.
pub(super) fn dot_label(lines: &[String]) -> String {
    let lines: Vec<String> = lines.iter().map(|l| dot_escape(l)).collect();
    format!("\"{}\"", lines.join("\\n"))
}

/// A quoted label of left-justified lines.
pub(super) fn dot_label_left(lines: &[String]) -> String {
    let mut out = String::from("\"");
    for l in lines {
        out.push_str(&dot_escape(l));
        out.push_str("\\l");
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sets_read_compactly() {
        let mut set = [false; 256];
        for b in b'a'..=b'z' {
            set[b as usize] = true;
        }
        set[b'_' as usize] = true;
        set[b' ' as usize] = true;
        assert_eq!(byte_set(&set), "' ' _ a-z");
        let mut set = [true; 256];
        set[b'"' as usize] = false;
        set[b'\\' as usize] = false;
        for b in set.iter_mut().take(0x20) {
            *b = false;
        }
        assert_eq!(byte_set(&set), "ASCII but \\x00-\\x1f \" \\ \\x80-\\xff");
    }

    #[test]
    fn labels_escape_quotes_and_backslashes() {
        assert_eq!(
            dot_label(&["{\"a\": \\n".into(), "x".into()]),
            "\"{\\\"a\\\": \\\\n\\nx\""
        );
        assert_eq!(cut("abcdef", 4), "abc…");
    }
}
