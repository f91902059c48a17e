//! Number functions: `max`, `min`, `signum`, `sum`, `parseint`, `range` and the like.

use super::*;

pub(super) fn extremum(a: &Args<'_>, pick: fn(f64, f64) -> f64) -> CallResult {
    let mut best = a.number(0)?;
    for i in 1..a.len() {
        best = pick(best, a.number(i)?);
    }
    ok_number(best)
}

pub(super) fn signum(a: &Args<'_>) -> CallResult {
    let n = a.number(0)?;
    // f64::signum gives 1 for +0.
    ok_number(if n == 0.0 { 0.0 } else { n.signum() })
}

pub(super) fn sum(a: &Args<'_>) -> CallResult {
    let items = a.elements(0, "number", as_number)?;
    if items.is_empty() {
        return Err(a.error(0, "cannot sum an empty list"));
    }
    ok_number(items.iter().sum())
}

pub(super) fn parseint(a: &Args<'_>) -> CallResult {
    let text = a.string(0)?;
    let base = a.int(1)?;
    let Some(base) = u32::try_from(base).ok().filter(|b| (2..=62).contains(b)) else {
        return Err(a.error(1, "base must be a whole number between 2 and 62 inclusive"));
    };
    let cannot = || {
        a.error(
            0,
            format!(
                "cannot parse {} as a base {base} integer",
                Value::string(text.as_str())
            ),
        )
    };
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    if digits.is_empty() {
        return Err(cannot());
    }
    let mut value: u128 = 0;
    for c in digits.chars() {
        // Up to base 36 letters are case-insensitive; above it, A-Z are the digits 36..61.
        let digit = match c {
            '0'..='9' => u32::from(c) - u32::from('0'),
            'a'..='z' => u32::from(c) - u32::from('a') + 10,
            'A'..='Z' if base <= 36 => u32::from(c) - u32::from('A') + 10,
            'A'..='Z' => u32::from(c) - u32::from('A') + 36,
            _ => return Err(cannot()),
        };
        if digit >= base {
            return Err(cannot());
        }
        value = value
            .checked_mul(u128::from(base))
            .and_then(|v| v.checked_add(u128::from(digit)))
            .ok_or_else(|| a.error(0, "number is too large"))?;
    }
    let n = value as f64;
    ok_number(if negative { -n } else { n })
}

pub(super) fn range(a: &Args<'_>) -> CallResult {
    let mut nums = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        let n = a.number(i)?;
        if !n.is_finite() {
            return Err(a.error(i, "must be a finite number"));
        }
        nums.push(n);
    }
    let (start, limit, step) = match nums[..] {
        [limit] => (0.0, limit, 1.0),
        [start, limit] => (start, limit, if start <= limit { 1.0 } else { -1.0 }),
        [start, limit, step] => (start, limit, step),
        _ => return Err(CallError::call("range expects 1 to 3 arguments")),
    };
    if step == 0.0 {
        return Err(a.error(2, "step must not be zero"));
    }
    let too_many = || {
        CallError::call(format!(
            "more than {MAX_ELEMENTS} values would be generated; decrease the difference between start and limit or use a larger step"
        ))
    };
    if ((limit - start) / step).ceil() > MAX_ELEMENTS as f64 {
        return Err(too_many());
    }
    let mut out = Vec::new();
    let mut v = start;
    while (step > 0.0 && v < limit) || (step < 0.0 && v > limit) {
        if out.len() >= MAX_ELEMENTS {
            return Err(too_many());
        }
        out.push(Value::Number(v));
        let next = v + step;
        if next == v {
            return Err(a.error(
                nums.len() - 1,
                "step is too small for the magnitude of the range",
            ));
        }
        v = next;
    }
    Ok(Value::List(out))
}
