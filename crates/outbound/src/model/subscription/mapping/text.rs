//! The text work of mapping-kit, without regular expressions: how actions-core's `get` splits
//! a path (`a.b`, `a[0]`, `a['b c']`), `@template`'s two passes of `{{{…}}}` then `{{…}}`, and
//! `@replace`'s escaped pattern (a literal, matched by UTF-16 units, case-folded as a
//! non-Unicode JavaScript regular expression folds with `i`) with `$&`-style replacements.

use super::super::js::string::{len16, trim};

/// A path as actions-core's `get` reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PathSpec {
    /// `''` or `'.'`: the object itself.
    Whole,
    Keys(Vec<String>),
}

/// `get`'s split: on `[` before a quote or digit, on `.`, and on a run of `]` after a quote
/// or digit; empty parts dropped, quotes removed.
pub(crate) fn split_path(path: &str) -> PathSpec {
    if path.is_empty() || path == "." {
        return PathSpec::Whole;
    }
    let chars: Vec<char> = path.chars().collect();
    let quote_or_digit = |c: char| c == '"' || c == '\'' || c.is_ascii_digit();
    let mut keys = Vec::new();
    let mut part = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let cut = match c {
            '[' => chars
                .get(i + 1)
                .is_some_and(|n| quote_or_digit(*n))
                .then_some(1),
            '.' => Some(1),
            ']' if i > 0 && quote_or_digit(chars[i - 1]) => {
                Some(chars[i..].iter().take_while(|c| **c == ']').count())
            }
            _ => None,
        };
        match cut {
            Some(n) => {
                keys.push(std::mem::take(&mut part));
                i += n;
            }
            None => {
                part.push(c);
                i += 1;
            }
        }
    }
    keys.push(part);
    PathSpec::Keys(
        keys.into_iter()
            .filter(|k| !k.is_empty())
            .map(|k| k.replace(['\'', '"'], ""))
            .collect(),
    )
}

/// `@path`'s argument: the first `$.` removed (wherever it is), then split.
pub(crate) fn path_arg(arg: &str) -> PathSpec {
    split_path(&arg.replacen("$.", "", 1))
}

/// A piece of a template pass: text kept as it is, or a placeholder's path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Key(PathSpec),
}

/// One pass of `render`: `braces` is 3 for `{{{…}}}`, 2 for `{{…}}`. A placeholder is the
/// braces around one or more characters other than `}`.
pub(crate) fn scan(template: &str, braces: usize) -> Vec<Piece> {
    let open = "{".repeat(braces);
    let close = "}".repeat(braces);
    let b = template.as_bytes();
    let mut pieces = Vec::new();
    let mut text_from = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' && template[i..].starts_with(&open) {
            let inner = i + braces;
            let end = template[inner..].find('}').map_or(b.len(), |n| inner + n);
            if end > inner && template[end..].starts_with(&close) {
                if text_from < i {
                    pieces.push(Piece::Text(template[text_from..i].to_owned()));
                }
                pieces.push(Piece::Key(split_path(trim(&template[inner..end]))));
                i = end + braces;
                text_from = i;
                continue;
            }
        }
        i += 1;
    }
    if text_from < b.len() {
        pieces.push(Piece::Text(template[text_from..].to_owned()));
    }
    pieces
}

/// A literal `@replace`, its flags applied.
#[derive(Debug, Clone)]
pub(crate) struct Replace {
    pattern: Vec<u16>,
    replacement: Vec<u16>,
    global: bool,
    ignore_case: bool,
}

impl Replace {
    /// mapping-kit's `performReplace` checks, made once: both at most 10 UTF-16 units.
    pub(crate) fn new(
        pattern: &str,
        replacement: &str,
        global: bool,
        ignore_case: bool,
    ) -> Result<Replace, String> {
        if len16(pattern) > super::validate::MAX_REPLACE_LEN {
            return Err("@replace requires a \"pattern\" less than 10 characters".into());
        }
        if len16(replacement) > super::validate::MAX_REPLACE_LEN {
            return Err("@replace requires a \"replacement\" less than 10 characters".into());
        }
        Ok(Replace {
            pattern: pattern.encode_utf16().collect(),
            replacement: replacement.encode_utf16().collect(),
            global,
            ignore_case,
        })
    }

    /// `value.replace(new RegExp(escaped(pattern), flags), replacement)`.
    pub(crate) fn apply(&self, value: &str) -> String {
        if !self.ignore_case && !value.contains(&*String::from_utf16_lossy(&self.pattern)) {
            return value.to_owned();
        }
        let v: Vec<u16> = value.encode_utf16().collect();
        let p = &self.pattern;
        let mut out: Vec<u16> = Vec::with_capacity(v.len());
        let mut i = 0;
        let mut copied = 0;
        while p.len() <= v.len() && i + p.len() <= v.len() {
            let hit = v[i..i + p.len()]
                .iter()
                .zip(p)
                .all(|(a, b)| a == b || (self.ignore_case && fold(*a) == fold(*b)));
            if !hit {
                i += 1;
                continue;
            }
            out.extend_from_slice(&v[copied..i]);
            self.substitute(&v, i, i + p.len(), &mut out);
            i += p.len();
            copied = i;
            if !self.global {
                break;
            }
        }
        out.extend_from_slice(&v[copied..]);
        String::from_utf16_lossy(&out)
    }

    /// GetSubstitution without capture groups: `$$`, `$&`, `` $` ``, `$'`; anything else
    /// (`$1`, `$<`) is literal.
    fn substitute(&self, v: &[u16], start: usize, end: usize, out: &mut Vec<u16>) {
        let r = &self.replacement;
        let dollar = u16::from(b'$');
        let mut i = 0;
        while i < r.len() {
            if r[i] == dollar && i + 1 < r.len() {
                let next = r[i + 1];
                if next == dollar {
                    out.push(dollar);
                } else if next == u16::from(b'&') {
                    out.extend_from_slice(&v[start..end]);
                } else if next == u16::from(b'`') {
                    out.extend_from_slice(&v[..start]);
                } else if next == u16::from(b'\'') {
                    out.extend_from_slice(&v[end..]);
                } else {
                    out.push(dollar);
                    i += 1;
                    continue;
                }
                i += 2;
                continue;
            }
            out.push(r[i]);
            i += 1;
        }
    }
}

/// Canonicalize of a non-Unicode regular expression with `i`: a unit's upper case when that is
/// one unit and does not turn a non-ASCII unit into an ASCII one.
fn fold(u: u16) -> u16 {
    let Some(c) = char::from_u32(u32::from(u)) else {
        return u;
    };
    let mut upper = c.to_uppercase();
    let (Some(one), None) = (upper.next(), upper.next()) else {
        return u;
    };
    let cu = one as u32;
    if cu > 0xFFFF || (u >= 128 && cu < 128) {
        return u;
    }
    cu as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> PathSpec {
        PathSpec::Keys(k.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn paths_split_on_dots_and_quoted_or_numeric_brackets() {
        assert_eq!(split_path("a.b"), keys(&["a", "b"]));
        assert_eq!(split_path("a[0].b"), keys(&["a", "0", "b"]));
        assert_eq!(split_path("a['b c']"), keys(&["a", "b c"]));
        assert_eq!(split_path("a[\"x.y\"]"), keys(&["a", "x", "y"]));
        assert_eq!(split_path("a[x]"), keys(&["a[x]"]));
        assert_eq!(split_path(""), PathSpec::Whole);
        assert_eq!(split_path(".."), keys(&[]));
    }

    #[test]
    fn path_arguments_lose_their_first_dollar_dot() {
        assert_eq!(path_arg("$.properties.x"), keys(&["properties", "x"]));
        assert_eq!(path_arg("$."), PathSpec::Whole);
        assert_eq!(path_arg("$"), keys(&["$"]));
        assert_eq!(path_arg("a.$.b"), keys(&["a", "b"]));
    }

    #[test]
    fn templates_find_placeholders_of_one_or_more_characters() {
        assert_eq!(
            scan("Hi {{ name }}!", 2),
            vec![
                Piece::Text("Hi ".into()),
                Piece::Key(keys(&["name"])),
                Piece::Text("!".into())
            ]
        );
        assert_eq!(scan("{{}}", 2), vec![Piece::Text("{{}}".into())]);
        assert_eq!(scan("{{{a}}}", 3), vec![Piece::Key(keys(&["a"]))]);
        assert_eq!(
            scan("{{{a}}", 2),
            vec![Piece::Key(keys(&["{a"]))],
            "the inner text may hold `{{`"
        );
    }

    #[test]
    fn replace_is_literal_and_global_by_default() {
        let r = Replace::new("a.b", "x", true, false).unwrap();
        assert_eq!(r.apply("a.b aab a.b"), "x aab x");
        let r = Replace::new("a", "x", false, false).unwrap();
        assert_eq!(r.apply("aaa"), "xaa");
    }

    #[test]
    fn replace_ignores_case_as_javascript_does_without_the_u_flag() {
        let r = Replace::new("straße", "s", true, true).unwrap();
        assert_eq!(r.apply("STRAßE"), "s");
        let r = Replace::new("k", "x", true, true).unwrap();
        assert_eq!(r.apply("K\u{212A}"), "x\u{212A}");
    }

    #[test]
    fn replacement_patterns_follow_get_substitution() {
        let r = Replace::new("b", "$&$$$`$'$1", true, false).unwrap();
        assert_eq!(r.apply("abc"), "ab$ac$1c");
    }

    #[test]
    fn replace_refuses_long_patterns() {
        assert!(Replace::new("abcdefghijk", "", true, false).is_err());
        assert!(Replace::new("a", "abcdefghijk", true, false).is_err());
    }
}
