//! Strings as JavaScript sees them: UTF-16 code units for lengths and indices, its own set of
//! white space for `trim`, and the case mappings of `toLowerCase` / `toUpperCase`.

/// One UTF-16 code unit of a string, as `s[i]` gives it: a whole character when it is in the
/// Basic Multilingual Plane, else half of a surrogate pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit<'s> {
    /// The character at that index, as a slice of the string.
    Char(&'s str),
    /// A high or low surrogate: half of a character outside the BMP.
    Lone(u16),
}

/// JavaScript's WhiteSpace and LineTerminator (what `trim` removes). Unlike Rust's
/// `char::is_whitespace`, it includes U+FEFF and excludes U+0085.
pub(crate) fn is_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{D}'
            | ' '
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// `String.prototype.trim`.
pub(crate) fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `s.length`: the number of UTF-16 code units.
pub(crate) fn len16(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `s[i]` for a UTF-16 index `i`, `None` past the end.
pub(crate) fn unit_at(s: &str, i: usize) -> Option<Unit<'_>> {
    let mut at = 0;
    for (byte, c) in s.char_indices() {
        let n = c.len_utf16();
        if i < at + n {
            if n == 1 {
                return Some(Unit::Char(&s[byte..byte + c.len_utf8()]));
            }
            let mut pair = [0u16; 2];
            c.encode_utf16(&mut pair);
            return Some(Unit::Lone(pair[i - at]));
        }
        at += n;
    }
    None
}

/// `toLowerCase()`: Unicode's full mappings (final sigma included), as V8's ICU applies them.
pub(crate) fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// `toUpperCase()`: Unicode's full mappings (`ß` → `SS`).
pub(crate) fn upper(s: &str) -> String {
    s.to_uppercase()
}

/// The text of a lone surrogate where a Rust string must hold it: U+FFFD, the only change the
/// engine makes to what JavaScript would carry.
pub(crate) const LONE: &str = "\u{FFFD}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_removes_javascript_white_space_only() {
        assert_eq!(trim("\u{FEFF} a \u{2028}"), "a");
        assert_eq!(trim("\u{85}a"), "\u{85}a");
    }

    #[test]
    fn lengths_and_indices_count_utf16_units() {
        assert_eq!(len16("a😀é"), 4);
        assert_eq!(unit_at("a😀é", 0), Some(Unit::Char("a")));
        assert_eq!(unit_at("a😀é", 1), Some(Unit::Lone(0xD83D)));
        assert_eq!(unit_at("a😀é", 2), Some(Unit::Lone(0xDE00)));
        assert_eq!(unit_at("a😀é", 3), Some(Unit::Char("é")));
        assert_eq!(unit_at("a😀é", 4), None);
    }

    #[test]
    fn case_mappings_are_unicodes_full_ones() {
        assert_eq!(upper("straße"), "STRASSE");
        assert_eq!(lower("ΟΔΟΣ"), "οδος");
    }
}
