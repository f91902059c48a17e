//! Number functions: `max`, `min`, `signum`, `sum`, `parseint`, `range` and the like, on the
//! language's big binary floats with go-cty's rules for the precision of each result.

use super::*;
use gpustack_protocol::number::NotANumber;
use std::cmp::Ordering;

/// `a * b` as go-cty multiplies: rounded at 512 bits, then kept at the larger of the operands'
/// precisions or as many bits as the product needs.
pub fn multiply(a: &Number, b: &Number) -> Result<Number, NotANumber> {
    let product = a.mul_prec(b, 512)?;
    let prec = a.prec().max(b.prec()).max(product.min_prec());
    Ok(product.with_prec(prec))
}

/// `a % b` as go-cty computes it: `a - b × trunc(a / b)` at `a`'s precision; `a` itself when
/// `b` is zero, and the product when either is infinite.
pub fn modulo(a: &Number, b: &Number) -> Result<Number, NotANumber> {
    if a.is_infinite() || b.is_infinite() {
        return multiply(a, b);
    }
    if b.is_zero() {
        return Ok(a.clone());
    }
    let quotient = a.div(b)?.trunc().with_prec(a.prec());
    let whole = b.mul_prec(&quotient, a.prec())?;
    a.with_prec(a.prec()).sub(&whole.with_prec(a.prec()))
}

pub(super) fn extremum(a: &Args<'_>, wanted: Ordering) -> CallResult {
    let mut best = a.number(0)?;
    for i in 1..a.len() {
        let n = a.number(i)?;
        if n.cmp_value(&best) == wanted {
            best = n;
        }
    }
    ok_number(best)
}

/// A whole number in Go's `int` range, as go-cty's conversion to `int` requires.
fn go_int(a: &Args<'_>, i: usize) -> CallResult<i64> {
    a.number(i)?.to_i64().ok_or_else(|| {
        a.call_error(
            "value must be a whole number, between -9223372036854775808 and 9223372036854775807",
        )
    })
}

pub(super) fn signum(a: &Args<'_>) -> CallResult {
    ok_number(Number::from_i64(go_int(a, 0)?.signum()))
}

/// The functions that compute in doubles: their results have 53 bits.
pub(super) fn float_result(a: &Args<'_>, v: f64) -> CallResult {
    Number::from_f64(v)
        .map(Value::Number)
        .ok_or_else(|| a.call_error("the result is not a number"))
}

pub(super) fn sum(a: &Args<'_>) -> CallResult {
    let items = a.optional_elements(0, "number", as_number)?;
    if items.is_empty() {
        return Err(a.error(0, "cannot sum an empty list"));
    }
    let mut total: Option<Number> = None;
    for item in items {
        let Some(n) = item else {
            return Err(a.error(0, "argument must be list, set, or tuple of number values"));
        };
        total = Some(match total {
            None => n,
            Some(t) => t
                .add(&n)
                .map_err(|_| a.call_error("can't compute sum of opposing infinities"))?,
        });
    }
    ok_number(total.unwrap_or_else(Number::zero))
}

pub(super) fn ceil_floor(a: &Args<'_>, up: bool) -> CallResult {
    let n = a.number(0)?;
    if n.is_infinite() || n.is_integer() {
        return ok_number(n);
    }
    let t = n.trunc();
    // Truncation moved a positive number down and a negative one up.
    let adjust = match (up, n.is_sign_negative()) {
        (true, false) => Some(1),
        (false, true) => Some(-1),
        _ => None,
    };
    let whole = match adjust {
        Some(d) => t
            .add(&Number::from_i64(d))
            .map_err(|_| a.call_error("not a number"))?,
        None => t,
    };
    ok_number(whole.with_prec(n.prec()))
}

pub(super) fn parseint(a: &Args<'_>) -> CallResult {
    let text = match a.value(0)? {
        Value::String(s) => s.clone(),
        other => {
            return Err(a.error(
                0,
                format!("first argument must be a string, not {}", other.type_name()),
            ));
        }
    };
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
    let mut value = num_bigint::BigUint::default();
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
        value = value * base + digit;
    }
    ok_number(Number::from_bigint(negative, value))
}

pub(super) fn range(a: &Args<'_>) -> CallResult {
    let mut nums = Vec::with_capacity(a.len());
    for i in 0..a.len() {
        nums.push(a.number(i)?);
    }
    let one = Number::from_i64(1);
    let minus_one = Number::from_i64(-1);
    let zero = Number::from_i64(0);
    let less = |x: &Number, y: &Number| x.cmp_value(y) == Ordering::Less;
    let (start, end, step) = match &nums[..] {
        [end] if less(end, &zero) => (zero.clone(), end.clone(), minus_one),
        [end] => (zero.clone(), end.clone(), one),
        [start, end] if less(end, start) => (start.clone(), end.clone(), minus_one),
        [start, end] => (start.clone(), end.clone(), one),
        [start, end, step] => (start.clone(), end.clone(), step.clone()),
        _ => return Err(CallError::call("must have one, two, or three arguments")),
    };
    if step.is_zero() {
        return Err(a.error(2, "step must not be zero"));
    }
    let down = less(&step, &zero);
    if down && less(&start, &end) {
        return Err(a.error(1, "end must be less than start when step is negative"));
    }
    if !down && less(&end, &start) {
        return Err(a.error(1, "end must be greater than start when step is positive"));
    }
    let mut out = Vec::new();
    let mut n = start;
    loop {
        let done = match n.cmp_value(&end) {
            Ordering::Equal => true,
            Ordering::Less => down,
            Ordering::Greater => !down,
        };
        if done {
            break;
        }
        if out.len() >= RANGE_LIMIT {
            return Err(CallError::call(format!(
                "more than {RANGE_LIMIT} values were generated; either decrease the difference between start and end or use a smaller step"
            )));
        }
        let next = n
            .add(&step)
            .map_err(|_| a.call_error("can't compute sum of opposing infinities"))?;
        out.push(Value::Number(n));
        n = next;
    }
    Ok(Value::List(out))
}

/// go-cty's `range` stops at 1024 values.
const RANGE_LIMIT: usize = 1024;
