//! Random JSON values for the Node round-trip and interop tests, weighted towards the
//! edge cases, as JSON allows.

use serde_json::{Map, Number, Value};

pub const EDGE_NUMBERS: &[&str] = &[
    "1.0",
    "-0.0",
    "1e21",
    "1e-7",
    "0.000001",
    "9007199254740993",
    "-9007199254740993",
    "9007199254740991",
    "18446744073709551615",
    "-9223372036854775808",
    "123456789012345680000",
    "5e-324",
    "1.7976931348623157e308",
    "0.1",
    "100",
    "1e20",
    "123e-20",
    "2.5e-7",
];
pub const EDGE_KEYS: &[&str] = &[
    "10",
    "2",
    "01",
    "4294967295",
    "4294967294",
    "0",
    "-1",
    "1.5",
    "",
    "__proto__",
    "a b",
    "Ünï",
    "\u{2028}",
    "😀",
];
pub const EDGE_STRINGS: &[&str] = &[
    "",
    "\"",
    "\\",
    "\\\"",
    "\u{2028}\u{2029}",
    "😀👍🏽",
    "\u{0}\u{1}\u{1f}\u{7f}",
    "\n\r\t\u{8}\u{c}",
    "</script>",
    "é",
    "\u{feff}",
];

pub struct Gen(pub fastrand::Rng);

impl Gen {
    pub fn new(seed: u64) -> Self {
        Gen(fastrand::Rng::with_seed(seed))
    }

    pub fn string(&mut self) -> String {
        if self.0.u8(0..4) == 0 {
            return EDGE_STRINGS[self.0.usize(0..EDGE_STRINGS.len())].to_string();
        }
        let len = self.0.usize(0..12);
        (0..len)
            .map(|_| match self.0.u8(0..6) {
                0 => char::from_u32(self.0.u32(0..0x20)).unwrap(),
                1 => ['"', '\\', '/', '\u{2028}', '\u{2029}', '\u{7f}'][self.0.usize(0..6)],
                2 => char::from_u32(self.0.u32(0x80..0x800)).unwrap(),
                3 => loop {
                    if let Some(c) = char::from_u32(self.0.u32(0x800..0x11_0000)) {
                        break c;
                    }
                },
                _ => self.0.alphanumeric(),
            })
            .collect()
    }

    pub fn key(&mut self) -> String {
        match self.0.u8(0..4) {
            0 => EDGE_KEYS[self.0.usize(0..EDGE_KEYS.len())].to_string(),
            1 => self.0.u32(0..100).to_string(),
            _ => self.string(),
        }
    }

    pub fn number(&mut self) -> Value {
        let text = match self.0.u8(0..5) {
            0 => EDGE_NUMBERS[self.0.usize(0..EDGE_NUMBERS.len())].to_string(),
            1 => self.0.i64(..).to_string(),
            2 => self.0.i32(-1000..1000).to_string(),
            3 => {
                let f = f64::from_bits(self.0.u64(..));
                if f.is_finite() {
                    format!("{f:e}")
                } else {
                    "0.5".into()
                }
            }
            _ => format!("{}", self.0.f64() * 10f64.powi(self.0.i32(-10..25))),
        };
        serde_json::from_str(&text).unwrap_or(Value::Number(Number::from(0)))
    }

    pub fn value(&mut self, depth: u32) -> Value {
        let pick = if depth >= 4 {
            self.0.u8(0..4)
        } else {
            self.0.u8(0..6)
        };
        match pick {
            0 => [Value::Null, Value::Bool(true), Value::Bool(false)][self.0.usize(0..3)].clone(),
            1 => self.number(),
            2 | 3 => Value::String(self.string()),
            4 => Value::Array(
                (0..self.0.usize(0..5))
                    .map(|_| self.value(depth + 1))
                    .collect(),
            ),
            _ => Value::Object(self.object(depth + 1)),
        }
    }

    pub fn object(&mut self, depth: u32) -> Map<String, Value> {
        (0..self.0.usize(0..6))
            .map(|_| (self.key(), self.value(depth)))
            .collect()
    }
}
