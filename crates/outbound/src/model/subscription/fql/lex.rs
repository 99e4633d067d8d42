//! fql-ts's lexer, ported unit by unit (it reads UTF-16 code units): tokens, and its quirks
//! kept (`!=` must be followed by white space, a name must end before `<` or a quote, a
//! string's closing quote is only taken before a terminator, `accept` does not step back at
//! the end of the query).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Ident,
    Dot,
    Operator,
    Conditional,
    Str,
    Number,
    Null,
    BrackLeft,
    BrackRight,
    ParenLeft,
    ParenRight,
    Comma,
    Eos,
}

#[derive(Debug, Clone)]
pub(super) struct Tok {
    pub(super) kind: Kind,
    pub(super) value: String,
    /// UTF-16 index of the token's first unit.
    pub(super) at: usize,
}

/// A refusal before byte offsets are known: a UTF-16 index.
pub(super) struct Refusal {
    pub(super) at: usize,
    pub(super) token: String,
    pub(super) expected: String,
}

pub(super) fn refuse(at: usize, token: impl Into<String>, expected: impl Into<String>) -> Refusal {
    Refusal {
        at,
        token: token.into(),
        expected: expected.into(),
    }
}

const MAX_LEN: usize = 100_000;

pub(super) struct Lexer<'q> {
    pub(super) units: &'q [u16],
    pub(super) pos: usize,
}

fn is_whitespace(c: Option<u16>) -> bool {
    matches!(c, Some(0x20 | 0x09 | 0x0A))
}

fn is_alpha(c: Option<u16>) -> bool {
    c.is_some_and(|c| c < 0x80 && (c as u8).is_ascii_alphabetic())
}

fn is_digit(c: Option<u16>) -> bool {
    c.is_some_and(|c| c < 0x80 && (c as u8).is_ascii_digit())
}

fn is_ident(c: Option<u16>) -> bool {
    is_alpha(c)
        || is_digit(c)
        || matches!(c, Some(u) if u == u16::from(b'_') || u == u16::from(b'-') || u == u16::from(b'\\'))
}

fn is_terminator(c: Option<u16>) -> bool {
    c.is_none()
        || is_whitespace(c)
        || c == Some(u16::from(b','))
        || c == Some(u16::from(b']'))
        || c == Some(u16::from(b')'))
}

fn is(c: Option<u16>, ch: u8) -> bool {
    c == Some(u16::from(ch))
}

fn text(units: &[u16]) -> String {
    String::from_utf16_lossy(units)
}

fn shown(c: Option<u16>) -> String {
    c.map_or_else(String::new, |u| text(&[u]))
}

impl Lexer<'_> {
    fn next(&mut self) -> Option<u16> {
        let c = self.units.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn peek(&self) -> Option<u16> {
        self.units.get(self.pos).copied()
    }

    fn tok(kind: Kind, value: impl Into<String>, at: usize) -> Tok {
        Tok {
            kind,
            value: value.into(),
            at,
        }
    }

    pub(super) fn lex(mut self) -> Result<Vec<Tok>, Refusal> {
        let mut tokens = Vec::new();
        loop {
            let at = self.pos;
            let Some(c) = self.next() else {
                tokens.push(Self::tok(Kind::Eos, "eos", at));
                return Ok(tokens);
            };
            let ch = Some(c);
            if is_whitespace(ch) {
                continue;
            }
            if is(ch, b'!') && (is_alpha(self.peek()) || is(self.peek(), b'(')) {
                tokens.push(Self::tok(Kind::Operator, "!", at));
                continue;
            }
            if is_alpha(ch)
                || [b'!', b'=', b'>', b'<', b'\\', b'_']
                    .iter()
                    .any(|b| is(ch, *b))
            {
                tokens.push(self.operator_or_conditional(c, at)?);
            } else if is_digit(ch) || is(ch, b'-') || is(ch, b'+') {
                tokens.push(self.number(c, at)?);
            } else if is(ch, b'"') || is(ch, b'\'') {
                tokens.push(self.string(c, at)?);
            } else {
                let kind = match c as u8 {
                    _ if c >= 0x80 => None,
                    b'.' => Some(Kind::Dot),
                    b'[' => Some(Kind::BrackLeft),
                    b']' => Some(Kind::BrackRight),
                    b',' => Some(Kind::Comma),
                    b'(' => Some(Kind::ParenLeft),
                    b')' => Some(Kind::ParenRight),
                    _ => None,
                };
                match kind {
                    Some(kind) => tokens.push(Self::tok(kind, text(&[c]), at)),
                    None => {
                        return Err(refuse(
                            at,
                            shown(ch),
                            "a field, an operator, a quoted value, `and`, `or`, `(` or `)` (this character has no place in a query)",
                        ))
                    }
                }
            }
        }
    }

    /// fql-ts's `accept`: consumes `word` when it is next and followed by a terminator. Like the
    /// original it does not step back when the query ends in the middle of the word.
    fn accept(&mut self, word: &str) -> bool {
        let mut read: Vec<u16> = Vec::new();
        for _ in word.chars() {
            let Some(c) = self.next() else {
                return false;
            };
            read.push(c);
            if is_terminator(Some(c)) {
                break;
            }
        }
        let wanted: Vec<u16> = word.encode_utf16().collect();
        if read == wanted && is_terminator(self.peek()) {
            return true;
        }
        self.pos -= read.len();
        false
    }

    fn operator_or_conditional(&mut self, c: u16, at: usize) -> Result<Tok, Refusal> {
        match c as u8 {
            b'=' if c < 0x80 => Ok(Self::tok(Kind::Operator, "=", at)),
            b'!' if c < 0x80 => {
                if self.accept("=") {
                    Ok(Self::tok(Kind::Operator, "!=", at))
                } else {
                    Err(refuse(
                        at,
                        format!("!{}", shown(self.peek())),
                        "`!=` followed by white space, or `!` right before `contains(` or `match(`",
                    ))
                }
            }
            b'a' if c < 0x80 && self.accept("nd") => Ok(Self::tok(Kind::Conditional, "and", at)),
            b'o' if c < 0x80 && self.accept("r") => Ok(Self::tok(Kind::Conditional, "or", at)),
            b'n' if c < 0x80 && self.accept("ull") => Ok(Self::tok(Kind::Null, "null", at)),
            b'<' | b'>' if c < 0x80 => {
                let op = if self.accept("=") {
                    format!("{}=", c as u8 as char)
                } else {
                    (c as u8 as char).to_string()
                };
                Ok(Self::tok(Kind::Operator, op, at))
            }
            _ => self.ident(c, at),
        }
    }

    fn ident(&mut self, first: u16, at: usize) -> Result<Tok, Refusal> {
        let mut s: Vec<u16> = Vec::new();
        let mut c = first;
        loop {
            if c == u16::from(b'\\') {
                if self.peek().is_none() {
                    return Err(refuse(
                        self.pos - 1,
                        "\\",
                        "a character after `\\` (it escapes the next one)",
                    ));
                }
                c = self.next().expect("peeked");
            }
            s.push(c);
            if s.len() >= MAX_LEN {
                return Err(refuse(
                    at,
                    text(&s[..20]),
                    "a name shorter than 100,000 characters",
                ));
            }
            if !is_ident(self.peek()) {
                break;
            }
            c = self.next().expect("peeked");
        }
        let coming = self.peek();
        if !(is_terminator(coming) || [b'.', b'(', b'=', b'!'].iter().any(|b| is(coming, *b))) {
            return Err(refuse(
                self.pos,
                shown(coming),
                format!(
                    "white space, `.`, `=`, `!=`, `(`, `,`, `)` or `]` after `{}` (put a space before `<`, `>` and quotes)",
                    text(&s)
                ),
            ));
        }
        Ok(Self::tok(Kind::Ident, text(&s), at))
    }

    fn number(&mut self, first: u16, at: usize) -> Result<Tok, Refusal> {
        let mut s: Vec<u16> = vec![first];
        let mut coming = self.peek();
        let mut decimal = false;
        while is_digit(coming) || is(coming, b'.') {
            let c = self.next().expect("peeked");
            s.push(c);
            if is(coming, b'.') {
                if is_terminator(self.peek()) {
                    return Err(refuse(
                        self.pos - 1,
                        text(&s),
                        "a digit after the decimal point",
                    ));
                }
                if decimal {
                    return Err(refuse(
                        self.pos - 1,
                        text(&s),
                        "a number with one decimal point",
                    ));
                }
                decimal = true;
            }
            if s.len() > MAX_LEN {
                return Err(refuse(
                    at,
                    text(&s[..20]),
                    "a number shorter than 100,000 digits",
                ));
            }
            coming = self.peek();
        }
        Ok(Self::tok(Kind::Number, text(&s), at))
    }

    fn string(&mut self, quote: u16, at: usize) -> Result<Tok, Refusal> {
        let mut s: Vec<u16> = Vec::new();
        while self.peek() != Some(quote) {
            match self.next() {
                Some(c) => s.push(c),
                None => {
                    return Err(refuse(
                        at,
                        text(&[quote]),
                        format!(
                            "a closing `{}` for the string that starts here",
                            text(&[quote])
                        ),
                    ))
                }
            }
            if s.len() >= MAX_LEN {
                return Err(refuse(
                    at,
                    text(&[quote]),
                    "a string shorter than 100,000 characters",
                ));
            }
        }
        // As in fql-ts, the closing quote is only taken when a terminator follows it; else the
        // next token starts at it.
        self.accept(&text(&[quote]));
        let mut value = vec![quote];
        value.extend(s);
        value.push(quote);
        Ok(Self::tok(Kind::Str, text(&value), at))
    }
}

/// Joins `a . b` into one identifier `a.b`.
pub(super) fn normalize(tokens: Vec<Tok>) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let current = &tokens[i];
        let next = tokens.get(i + 1);
        if out.last().is_some_and(|l| l.kind == Kind::Ident)
            && current.kind == Kind::Dot
            && next.is_some_and(|n| n.kind == Kind::Ident)
        {
            let last = out.last_mut().expect("checked");
            last.value = format!("{}.{}", last.value, next.expect("checked").value);
            i += 2;
        } else {
            out.push(current.clone());
            i += 1;
        }
    }
    out
}
