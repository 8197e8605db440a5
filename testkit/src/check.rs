//! Checking a text against a loaded grammar the way a serving engine would:
//! its real tokenization, token by token, each checked in the mask first.

/// Feeds `text`'s real tokenization (no special tokens added) through
/// `m`, checking each token is in the mask before it and accepted; then
/// that the end is accepting and EOS is allowed and accepted. `Err`
/// describes the first problem; `Ok` holds the token ids.
pub fn check_text(
    g: &tooldec_runtime::Grammar<'_>,
    mut m: tooldec_runtime::Matcher<'_>,
    hf: &tokenizers::Tokenizer,
    words: &mut [u32],
    text: &str,
) -> Result<Vec<u32>, String> {
    let enc = hf
        .encode(text, false)
        .map_err(|e| format!("the tokenizer cannot encode: {e}"))?;
    let ids = enc.get_ids();
    for (i, &t) in ids.iter().enumerate() {
        m.fill_mask(words);
        let allowed = words
            .get((t >> 5) as usize)
            .is_some_and(|w| w & (1 << (t & 31)) != 0);
        let shown = || {
            let before = hf.decode(&ids[..i], false).unwrap_or_default();
            format!(
                "token #{i} = {t} {:?} (bytes {:?}); text before it: {before:?}; ids: {ids:?}",
                hf.id_to_token(t).unwrap_or_default(),
                g.token_bytes(t).map(String::from_utf8_lossy)
            )
        };
        if !allowed {
            return Err(format!("not in the mask: {}", shown()));
        }
        if !m.accept_token(t) {
            return Err(format!(
                "in the mask but accept_token refuses it: {}",
                shown()
            ));
        }
    }
    if !m.is_accepting() {
        return Err(format!(
            "all {} tokens accepted but the end is not accepting (state {:?}); ids: {ids:?}",
            ids.len(),
            m.state()
        ));
    }
    m.fill_mask(words);
    let eos_allowed = g
        .eos_tokens()
        .iter()
        .any(|&t| words[(t >> 5) as usize] & (1 << (t & 31)) != 0);
    if !eos_allowed {
        return Err("accepting at the end, but no EOS token in the mask".into());
    }
    if !m.accept_token(g.eos_tokens()[0]) || !m.is_terminated() {
        return Err("EOS in the mask but not accepted".into());
    }
    Ok(ids.to_vec())
}
