//! Numbers as JavaScript writes and reads them: `Number.prototype.toString()` and `Number(text)`.
//! Segment's code turns numbers into text (templates, headers, `String(value)` in triggers) and
//! text into numbers (`Number(expected)` in triggers), so ours must do both exactly as V8 does.

use super::string::trim;

/// Appends `Number.prototype.toString()` of `f` (`1` for `1.0`, `1e+21`, `1e-7`, `NaN`).
pub(crate) fn write(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    let f = f.abs();
    // Integers below 2^53 are their own shortest digits: no formatting machinery needed.
    if f < 9_007_199_254_740_992.0 && f.fract() == 0.0 {
        out.push_str(&(f as u64).to_string());
        return;
    }
    // Rust's `{:e}` gives the shortest digits that read back as `f`, which is what
    // ECMAScript's Number::toString asks for; only the layout differs.
    let text = format!("{f:e}");
    let (mantissa, exponent) = text.split_once('e').expect("{:e} writes an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exponent
        .parse::<i32>()
        .expect("{:e} writes an integer exponent")
        + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

/// `Number.prototype.toString()` of `f` as a new string.
pub(crate) fn to_string(f: f64) -> String {
    let mut s = String::new();
    write(&mut s, f);
    s
}

/// `Number(text)`: JavaScript's StringToNumber (surrounding white space ignored, empty is 0,
/// `0x`/`0o`/`0b` integers, `Infinity`, anything else not a decimal literal is NaN).
pub(crate) fn parse(text: &str) -> f64 {
    let s = trim(text);
    if s.is_empty() {
        return 0.0;
    }
    match s {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let bytes = s.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return parse_radix(&s[2..], radix);
        }
    }
    if is_decimal_literal(bytes) {
        s.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

fn parse_radix(digits: &str, radix: u32) -> f64 {
    let mut exact: u128 = 0;
    let mut approx = 0.0f64;
    let mut fits = true;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return f64::NAN;
        };
        approx = approx * f64::from(radix) + f64::from(d);
        match exact
            .checked_mul(u128::from(radix))
            .and_then(|v| v.checked_add(u128::from(d)))
        {
            Some(v) => exact = v,
            None => fits = false,
        }
    }
    if fits {
        exact as f64
    } else {
        approx
    }
}

/// StrDecimalLiteral: `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`.
fn is_decimal_literal(b: &[u8]) -> bool {
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_without_a_fraction() {
        assert_eq!(to_string(1.0), "1");
        assert_eq!(to_string(-0.0), "0");
        assert_eq!(to_string(-42.0), "-42");
    }

    #[test]
    fn large_and_small_numbers_switch_to_exponents_where_javascript_does() {
        assert_eq!(to_string(1e21), "1e+21");
        assert_eq!(to_string(1e20), "100000000000000000000");
        assert_eq!(to_string(123456789012345680000.0), "123456789012345680000");
        assert_eq!(to_string(1e-7), "1e-7");
        assert_eq!(to_string(0.000001), "0.000001");
        assert_eq!(to_string(1.5e300), "1.5e+300");
        assert_eq!(to_string(5e-324), "5e-324");
        assert_eq!(to_string(2f64.powi(60)), "1152921504606847000");
    }

    #[test]
    fn fractions_use_the_shortest_digits_that_read_back() {
        assert_eq!(to_string(0.1), "0.1");
        assert_eq!(to_string(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(to_string(123.456), "123.456");
        assert_eq!(to_string(-1.5e-5), "-0.000015");
    }

    #[test]
    fn non_finite_numbers_have_names() {
        assert_eq!(to_string(f64::NAN), "NaN");
        assert_eq!(to_string(f64::INFINITY), "Infinity");
        assert_eq!(to_string(f64::NEG_INFINITY), "-Infinity");
    }

    #[test]
    fn number_of_text_follows_string_to_number() {
        assert_eq!(parse(""), 0.0);
        assert_eq!(parse("  \n"), 0.0);
        assert_eq!(parse(" 7 "), 7.0);
        assert_eq!(parse("1."), 1.0);
        assert_eq!(parse(".5"), 0.5);
        assert_eq!(parse("+5"), 5.0);
        assert_eq!(parse("-1e3"), -1000.0);
        assert_eq!(parse("0x10"), 16.0);
        assert_eq!(parse("0b101"), 5.0);
        assert_eq!(parse("-Infinity"), f64::NEG_INFINITY);
        for nan in [
            "abc", ".", "1e", "0x", "-0x10", "inf", "nan", "1_000", "1,5", "5px",
        ] {
            assert!(parse(nan).is_nan(), "{nan}");
        }
    }
}
