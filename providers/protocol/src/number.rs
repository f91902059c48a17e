//! The language's numbers: binary floating point of arbitrary precision, as Terraform's (go-cty's
//! `*big.Float`) are, so that a stack moved from Terraform computes and prints the same digits.
//!
//! A number is `±mant × 2^exp` with a precision in bits that travels with it, the way Go's
//! `big.Float` carries one: literals and decoded text are parsed at 512 bits, integers that
//! functions compute have 64, and the results of functions that compute in `float64` (`pow`,
//! `log`) have 53. An operation rounds to the larger precision of its operands, to nearest
//! with ties to even; there are signed zeros and infinities, and an operation with no defined
//! result (`0/0`, `Inf - Inf`) is an error. Text is Go's: the shortest decimal that reads back
//! to the same number at its precision (`0.1 + 0.2` prints `0.3`; `1/3`, 155 digits).
//!
//! **Invariant:** a finite mantissa is odd (trailing zero bits moved into the exponent) and
//! has at most `prec` bits, so equal numbers have equal representations whatever their
//! history, and integers that fit in 64 bits need no allocation.

use num_bigint::BigUint;
use num_traits::{One, ToPrimitive, Zero};
use std::cmp::Ordering;
use std::fmt;

/// The precision of numbers parsed from text (HCL literals, JSON, YAML, `tonumber`).
pub const PARSE_PREC: u32 = 512;
/// The precision of integers computed by functions (Go's `SetInt64`).
pub const INT_PREC: u32 = 64;
/// The precision of numbers computed in IEEE doubles.
pub const FLOAT_PREC: u32 = 53;

#[derive(Clone, PartialEq, Eq, Hash)]
enum Mant {
    Small(u64),
    Big(Box<BigUint>),
}

impl Mant {
    fn from_big(b: BigUint) -> Mant {
        match b.to_u64() {
            Some(s) => Mant::Small(s),
            None => Mant::Big(Box::new(b)),
        }
    }

    fn big(&self) -> BigUint {
        match self {
            Mant::Small(s) => BigUint::from(*s),
            Mant::Big(b) => (**b).clone(),
        }
    }

    fn bits(&self) -> u64 {
        match self {
            Mant::Small(s) => u64::from(64 - s.leading_zeros()),
            Mant::Big(b) => b.bits(),
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Form {
    Zero,
    Inf,
    /// `mant × 2^exp`, `mant` odd.
    Finite {
        mant: Mant,
        exp: i64,
    },
}

/// A number of the language; see the module's documentation.
#[derive(Clone)]
pub struct Number {
    neg: bool,
    form: Form,
    prec: u32,
}

/// An operation without a defined result (Go's `big.ErrNaN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a number")]
pub struct NotANumber;

/// Why text is not a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a number is required")]
pub struct ParseNumberError;

impl Number {
    pub fn zero() -> Number {
        Number {
            neg: false,
            form: Form::Zero,
            prec: INT_PREC,
        }
    }

    pub fn infinity(neg: bool) -> Number {
        Number {
            neg,
            form: Form::Inf,
            prec: 0,
        }
    }

    /// An integer, exactly, at 64 bits (as Go's `SetInt64`).
    pub fn from_i64(v: i64) -> Number {
        let neg = v < 0;
        Number::from_parts(neg, BigUint::from(v.unsigned_abs()), 0, INT_PREC)
    }

    pub fn from_u64(v: u64) -> Number {
        Number::from_parts(false, BigUint::from(v), 0, INT_PREC)
    }

    /// A big integer, exactly, at `max(64, its bit length)` bits (as Go's `SetInt`).
    pub fn from_bigint(neg: bool, magnitude: BigUint) -> Number {
        let prec = u32::try_from(magnitude.bits())
            .unwrap_or(u32::MAX)
            .max(INT_PREC);
        Number::from_parts(neg, magnitude, 0, prec)
    }

    /// A double, exactly, at 53 bits; `None` for NaN.
    pub fn from_f64(v: f64) -> Option<Number> {
        if v.is_nan() {
            return None;
        }
        if v.is_infinite() {
            return Some(Number::infinity(v < 0.0));
        }
        let neg = v.is_sign_negative();
        if v == 0.0 {
            return Some(Number {
                neg,
                form: Form::Zero,
                prec: FLOAT_PREC,
            });
        }
        let bits = v.abs().to_bits();
        let raw_exp = i64::try_from((bits >> 52) & 0x7ff).unwrap_or(0);
        let frac = bits & ((1 << 52) - 1);
        let (mant, exp) = if raw_exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), raw_exp - 1075)
        };
        Some(Number::from_parts(
            neg,
            BigUint::from(mant),
            exp,
            FLOAT_PREC,
        ))
    }

    /// `±m × 2^e` rounded to `prec` bits; zero (positive) when `m` is 0.
    fn from_parts(neg: bool, m: BigUint, e: i64, prec: u32) -> Number {
        if m.is_zero() {
            return Number {
                neg,
                form: Form::Zero,
                prec,
            };
        }
        let (m, e) = round_to(m, e, prec, false);
        Number {
            neg,
            form: normalized(m, e),
            prec,
        }
    }

    /// The precision in bits (0 for an infinity).
    pub fn prec(&self) -> u32 {
        self.prec
    }

    /// The same value at another precision (rounding if it has more bits).
    pub fn with_prec(&self, prec: u32) -> Number {
        match &self.form {
            Form::Finite { mant, exp } => Number::from_parts(self.neg, mant.big(), *exp, prec),
            _ => Number {
                prec,
                ..self.clone()
            },
        }
    }

    pub fn is_zero(&self) -> bool {
        matches!(self.form, Form::Zero)
    }

    pub fn is_infinite(&self) -> bool {
        matches!(self.form, Form::Inf)
    }

    pub fn is_finite(&self) -> bool {
        !self.is_infinite()
    }

    /// True for a negative number, negative zero and negative infinity.
    pub fn is_sign_negative(&self) -> bool {
        self.neg
    }

    /// -1, 0 or 1 (zeros of either sign are 0).
    pub fn signum(&self) -> i32 {
        match (&self.form, self.neg) {
            (Form::Zero, _) => 0,
            (_, true) => -1,
            (_, false) => 1,
        }
    }

    /// True for a finite number without a fraction.
    pub fn is_integer(&self) -> bool {
        match &self.form {
            Form::Zero => true,
            Form::Inf => false,
            Form::Finite { exp, .. } => *exp >= 0,
        }
    }

    /// The value when it is an integer that fits in `i64`.
    pub fn to_i64(&self) -> Option<i64> {
        if !self.is_integer() {
            return None;
        }
        let (neg, m) = self.trunc_parts()?;
        if neg {
            let v = m.to_u64()?;
            if v <= i64::MAX.unsigned_abs() + 1 {
                Some(0i64.wrapping_sub_unsigned(v))
            } else {
                None
            }
        } else {
            m.to_i64()
        }
    }

    /// The integer part (toward zero) as sign and magnitude; `None` for an infinity.
    pub fn trunc_parts(&self) -> Option<(bool, BigUint)> {
        match &self.form {
            Form::Zero => Some((false, BigUint::zero())),
            Form::Inf => None,
            Form::Finite { mant, exp } => {
                let m = mant.big();
                let v = if *exp >= 0 {
                    m << usize::try_from(*exp).ok()?
                } else {
                    let shift = exp.unsigned_abs();
                    if shift >= m.bits() {
                        BigUint::zero()
                    } else {
                        m >> shift
                    }
                };
                let neg = self.neg && !v.is_zero();
                Some((neg, v))
            }
        }
    }

    /// The integer part toward zero, as a number of the same precision (Go's `Int` then
    /// `SetInt` on a copy).
    pub fn trunc(&self) -> Number {
        match self.trunc_parts() {
            None => self.clone(),
            Some((neg, m)) => {
                let mut n = Number::from_parts(neg, m, 0, self.prec);
                if n.is_zero() {
                    n.neg = false;
                }
                n
            }
        }
    }

    /// The nearest double (ties to even), infinities beyond its range.
    pub fn to_f64(&self) -> f64 {
        let sign = if self.neg { -1.0 } else { 1.0 };
        match &self.form {
            Form::Zero => sign * 0.0,
            Form::Inf => sign * f64::INFINITY,
            Form::Finite { mant, exp } => {
                let bits = i64::try_from(mant.bits()).unwrap_or(i64::MAX);
                // The exponent of the leading bit: the value is in [2^top, 2^(top+1)).
                let top = exp.saturating_add(bits - 1);
                if top > 1023 {
                    return sign * f64::INFINITY;
                }
                // Subnormals have fewer bits of precision.
                let prec = if top < -1022 { 53 - (-1022 - top) } else { 53 };
                if prec <= 0 {
                    // Below half the smallest subnormal rounds to zero; more than half to it.
                    if prec == 0 && (bits > 1) {
                        return sign * f64::from_bits(1);
                    }
                    return sign * 0.0;
                }
                let (m, e) = round_to(mant.big(), *exp, u32::try_from(prec).unwrap_or(53), false);
                let m = m.to_u64().unwrap_or(0);
                // m × 2^e, exactly representable now unless it rounded up past the top.
                let v = (m as f64) * pow2(e);
                sign * v
            }
        }
    }

    /// Parses a decimal number as Go's `big.ParseFloat(s, 10, 512, ToNearestEven)` does,
    /// digit for digit: an optional sign, digits with an optional point, an optional `e`
    /// exponent, or `Inf`.
    pub fn parse(s: &str) -> Result<Number, ParseNumberError> {
        parse_decimal(s, PARSE_PREC)
    }

    /// Go's `Text('f', -1)`: the shortest decimal that reads back to this number at its
    /// precision, without an exponent (`+Inf` and `-Inf` for the infinities).
    pub fn to_text(&self) -> String {
        self.text('f', -1)
    }

    /// Go's `big.Float.Text(format, prec)` for the formats `e`, `E`, `f`, `g`, `G`; a
    /// negative `prec` asks for the shortest digits.
    pub fn text(&self, format: char, prec: i64) -> String {
        let mut out = String::new();
        if self.neg {
            out.push('-');
        }
        if self.is_infinite() {
            if !self.neg {
                out.push('+');
            }
            out.push_str("Inf");
            return out;
        }
        let mut d = Decimal::of(self);
        let shortest = prec < 0;
        let mut prec = prec;
        if shortest {
            d.round_shortest(self);
            prec = match format {
                'e' | 'E' => i64::try_from(d.mant.len()).unwrap_or(0) - 1,
                'f' => (i64::try_from(d.mant.len()).unwrap_or(0) - d.exp).max(0),
                _ => i64::try_from(d.mant.len()).unwrap_or(0),
            };
        } else {
            match format {
                'e' | 'E' => d.round(1 + prec),
                'f' => d.round(d.exp + prec),
                _ => {
                    if prec == 0 {
                        prec = 1;
                    }
                    d.round(prec);
                }
            }
        }
        match format {
            'e' | 'E' => fmt_e(&mut out, format, prec, &d),
            'f' => fmt_f(&mut out, prec, &d),
            _ => {
                let len = i64::try_from(d.mant.len()).unwrap_or(0);
                let mut eprec = prec;
                if eprec > len && len >= d.exp {
                    eprec = len;
                }
                if shortest {
                    eprec = 6;
                }
                let exp = d.exp - 1;
                if exp < -4 || exp >= eprec {
                    if prec > len {
                        prec = len;
                    }
                    let e = if format == 'G' { 'E' } else { 'e' };
                    fmt_e(&mut out, e, prec - 1, &d);
                } else {
                    if prec > d.exp {
                        prec = len;
                    }
                    fmt_f(&mut out, (prec - d.exp).max(0), &d);
                }
            }
        }
        out
    }

    pub fn neg(&self) -> Number {
        Number {
            neg: !self.neg,
            ..self.clone()
        }
    }

    pub fn abs(&self) -> Number {
        Number {
            neg: false,
            ..self.clone()
        }
    }

    /// `self + other` at the larger precision (Go's `Add`).
    pub fn add(&self, other: &Number) -> Result<Number, NotANumber> {
        let prec = self.prec.max(other.prec);
        match (&self.form, &other.form) {
            (Form::Inf, Form::Inf) if self.neg != other.neg => Err(NotANumber),
            (Form::Inf, _) => Ok(Number {
                prec,
                ..self.clone()
            }),
            (_, Form::Inf) => Ok(Number {
                prec,
                ..other.clone()
            }),
            (Form::Zero, Form::Zero) => Ok(Number {
                neg: self.neg && other.neg,
                form: Form::Zero,
                prec,
            }),
            (Form::Zero, _) => Ok(other.with_prec(prec)),
            (_, Form::Zero) => Ok(self.with_prec(prec)),
            (Form::Finite { mant: ma, exp: ea }, Form::Finite { mant: mb, exp: eb }) => {
                let e = (*ea).min(*eb);
                let a = ma.big() << u64::try_from(ea - e).unwrap_or(0);
                let b = mb.big() << u64::try_from(eb - e).unwrap_or(0);
                let (neg, m) = if self.neg == other.neg {
                    (self.neg, a + b)
                } else {
                    match a.cmp(&b) {
                        Ordering::Equal => {
                            return Ok(Number {
                                neg: false,
                                form: Form::Zero,
                                prec,
                            });
                        }
                        Ordering::Greater => (self.neg, a - b),
                        Ordering::Less => (other.neg, b - a),
                    }
                };
                Ok(Number::from_parts(neg, m, e, prec))
            }
        }
    }

    pub fn sub(&self, other: &Number) -> Result<Number, NotANumber> {
        self.add(&other.neg())
    }

    /// `self × other` at the larger precision (Go's `Mul`).
    pub fn mul(&self, other: &Number) -> Result<Number, NotANumber> {
        self.mul_prec(other, self.prec.max(other.prec))
    }

    /// `self × other` rounded to `prec` bits.
    pub fn mul_prec(&self, other: &Number, prec: u32) -> Result<Number, NotANumber> {
        let neg = self.neg != other.neg;
        match (&self.form, &other.form) {
            (Form::Inf, Form::Zero) | (Form::Zero, Form::Inf) => Err(NotANumber),
            (Form::Inf, _) | (_, Form::Inf) => Ok(Number {
                neg,
                form: Form::Inf,
                prec,
            }),
            (Form::Zero, _) | (_, Form::Zero) => Ok(Number {
                neg,
                form: Form::Zero,
                prec,
            }),
            (Form::Finite { mant: ma, exp: ea }, Form::Finite { mant: mb, exp: eb }) => {
                let m = match (ma, mb) {
                    (Mant::Small(a), Mant::Small(b)) => {
                        BigUint::from(u128::from(*a) * u128::from(*b))
                    }
                    _ => ma.big() * mb.big(),
                };
                Ok(Number::from_parts(neg, m, ea + eb, prec))
            }
        }
    }

    /// The smallest precision that holds this number exactly (Go's `MinPrec`).
    pub fn min_prec(&self) -> u32 {
        match &self.form {
            Form::Finite { mant, .. } => u32::try_from(mant.bits()).unwrap_or(u32::MAX),
            _ => 0,
        }
    }

    /// `self ÷ other` at the larger precision (Go's `Quo`): a finite number divided by zero
    /// is an infinity; `0/0` and `Inf/Inf` have no result.
    pub fn div(&self, other: &Number) -> Result<Number, NotANumber> {
        let prec = self.prec.max(other.prec);
        let neg = self.neg != other.neg;
        match (&self.form, &other.form) {
            (Form::Zero, Form::Zero) | (Form::Inf, Form::Inf) => Err(NotANumber),
            (Form::Zero, _) | (_, Form::Inf) => Ok(Number {
                neg,
                form: Form::Zero,
                prec,
            }),
            (Form::Inf, _) | (_, Form::Zero) => Ok(Number {
                neg,
                form: Form::Inf,
                prec,
            }),
            (Form::Finite { mant: ma, exp: ea }, Form::Finite { mant: mb, exp: eb }) => {
                let a = ma.big();
                let b = mb.big();
                // Enough quotient bits for the precision, a guard bit and a sticky bit.
                let want = u64::from(prec) + 2;
                let shift = (want + b.bits()).saturating_sub(a.bits());
                let a = a << shift;
                let (q, r) = num_integer::Integer::div_rem(&a, &b);
                let sticky = u8::from(!r.is_zero());
                let m = (q << 1u8) | BigUint::from(sticky);
                let e = ea - eb - i64::try_from(shift).unwrap_or(0) - 1;
                Ok(Number::from_parts(neg, m, e, prec))
            }
        }
    }

    /// Compares as numbers: zeros of either sign are equal, infinities beyond everything.
    pub fn cmp_value(&self, other: &Number) -> Ordering {
        let sa = self.signum_inf();
        let sb = other.signum_inf();
        if sa != sb {
            return sa.cmp(&sb);
        }
        if sa == 0 {
            return Ordering::Equal;
        }
        let mag = match (&self.form, &other.form) {
            (Form::Inf, Form::Inf) => Ordering::Equal,
            (Form::Inf, _) => Ordering::Greater,
            (_, Form::Inf) => Ordering::Less,
            (Form::Finite { mant: ma, exp: ea }, Form::Finite { mant: mb, exp: eb }) => {
                let ta = *ea + i64::try_from(ma.bits()).unwrap_or(0);
                let tb = *eb + i64::try_from(mb.bits()).unwrap_or(0);
                if ta != tb {
                    ta.cmp(&tb)
                } else {
                    let e = (*ea).min(*eb);
                    let a = ma.big() << u64::try_from(ea - e).unwrap_or(0);
                    let b = mb.big() << u64::try_from(eb - e).unwrap_or(0);
                    a.cmp(&b)
                }
            }
            _ => Ordering::Equal,
        };
        if sa < 0 { mag.reverse() } else { mag }
    }

    fn signum_inf(&self) -> i32 {
        self.signum()
    }

    /// Equality as go-cty defines it: integers compare exactly, other numbers by the text
    /// they print, and `-0 == 0`.
    pub fn equals(&self, other: &Number) -> bool {
        if self.is_zero() && other.is_zero() {
            return true;
        }
        if self.neg != other.neg {
            return false;
        }
        match (self.is_integer(), other.is_integer()) {
            (true, true) => self.cmp_value(other) == Ordering::Equal,
            (false, false) => {
                if self.is_infinite() || other.is_infinite() {
                    return self.is_infinite() && other.is_infinite();
                }
                if self.form == other.form {
                    return true;
                }
                self.to_text() == other.to_text()
            }
            _ => false,
        }
    }
}

/// 2^e as a double (exact for the exponents a rounded double can have).
fn pow2(e: i64) -> f64 {
    let e = i32::try_from(e.clamp(-2000, 2000)).unwrap_or(0);
    if e >= -1022 {
        2f64.powi(e)
    } else {
        2f64.powi(-1022) * 2f64.powi(e + 1022)
    }
}

/// `m` (odd or not) with its trailing zero bits moved into the exponent.
fn normalized(m: BigUint, e: i64) -> Form {
    let tz = m.trailing_zeros().unwrap_or(0);
    let m = m >> tz;
    Form::Finite {
        mant: Mant::from_big(m),
        exp: e + i64::try_from(tz).unwrap_or(0),
    }
}

/// `m × 2^e` rounded to `prec` bits, ties to even; `sticky` says nonzero bits were already
/// dropped below `m`.
fn round_to(m: BigUint, e: i64, prec: u32, sticky: bool) -> (BigUint, i64) {
    let bits = m.bits();
    let prec = u64::from(prec.max(1));
    if bits <= prec {
        return (m, e);
    }
    let shift = bits - prec;
    let mut q = &m >> shift;
    let half_bit = m.bit(shift - 1);
    let below = sticky || (shift >= 2 && lower_bits_nonzero(&m, shift - 1));
    let round_up = half_bit && (below || q.bit(0));
    let mut e = e + i64::try_from(shift).unwrap_or(0);
    if round_up {
        q += 1u8;
        if q.bits() > prec {
            q >>= 1u8;
            e += 1;
        }
    }
    (q, e)
}

fn lower_bits_nonzero(m: &BigUint, n: u64) -> bool {
    m.trailing_zeros().is_some_and(|tz| tz < n)
}

/// Go's `big.ParseFloat(s, 10, prec, ToNearestEven)`: the digits as one exact integer, then
/// one multiplication or division by a power of five computed at `prec + 64` bits.
fn parse_decimal(s: &str, prec: u32) -> Result<Number, ParseNumberError> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if body == "Inf" || body == "inf" {
        return Ok(Number::infinity(neg));
    }
    let bytes = body.as_bytes();
    let mut i = 0;
    let mut digits = String::new();
    let mut frac_digits: i64 = 0;
    let mut seen_point = false;
    let mut any_digit = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            digits.push(char::from(c));
            any_digit = true;
            if seen_point {
                frac_digits += 1;
            }
        } else if c == b'.' && !seen_point {
            seen_point = true;
        } else {
            break;
        }
        i += 1;
    }
    if !any_digit {
        return Err(ParseNumberError);
    }
    let mut exp10: i64 = 0;
    if i < bytes.len() {
        if bytes[i] != b'e' && bytes[i] != b'E' {
            return Err(ParseNumberError);
        }
        i += 1;
        let mut eneg = false;
        if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
            eneg = bytes[i] == b'-';
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            exp10 = exp10
                .saturating_mul(10)
                .saturating_add(i64::from(bytes[i] - b'0'));
            i += 1;
        }
        if i == start || i != bytes.len() {
            return Err(ParseNumberError);
        }
        if eneg {
            exp10 = -exp10;
        }
    }
    let m: BigUint = digits.parse().map_err(|_| ParseNumberError)?;
    if m.is_zero() {
        return Ok(Number {
            neg,
            form: Form::Zero,
            prec,
        });
    }
    let exp5 = exp10 - frac_digits;
    if exp5.unsigned_abs() > 1 << 31 {
        return Err(ParseNumberError);
    }
    if exp5 == 0 {
        return Ok(Number::from_parts(neg, m, 0, prec));
    }
    let z = Number::from_parts(neg, m, 0, u32::MAX).with_exact(exp5);
    let p = pow5(exp5.unsigned_abs(), prec + 64);
    // The dividend's exact mantissa, rounded only in the result.
    let scaled = if exp5 > 0 {
        z.mul_prec(&p, prec)
    } else {
        z.div_prec(&p, prec)
    };
    scaled.map_err(|_| ParseNumberError)
}

impl Number {
    /// Multiplies by 2^exp2 exactly (a decimal exponent's factor of two).
    fn with_exact(mut self, exp2: i64) -> Number {
        if let Form::Finite { exp, .. } = &mut self.form {
            *exp += exp2;
        }
        self
    }

    fn div_prec(&self, other: &Number, prec: u32) -> Result<Number, NotANumber> {
        let a = Number {
            prec,
            ..self.clone()
        };
        let b = Number {
            prec,
            ..other.clone()
        };
        a.div(&b)
    }
}

/// 5^n as Go's parser computes it: exact up to 5^27, then by squaring at `prec` bits.
fn pow5(n: u64, prec: u32) -> Number {
    const EXACT: u64 = 27;
    let exact = |k: u64| {
        let mut v = BigUint::one();
        for _ in 0..k {
            v *= 5u8;
        }
        v
    };
    if n <= EXACT {
        return Number::from_parts(false, exact(n), 0, prec);
    }
    let mut z = Number::from_parts(false, exact(EXACT), 0, prec);
    let mut f = Number::from_parts(false, BigUint::from(5u8), 0, prec);
    let mut n = n - EXACT;
    while n > 0 {
        if n & 1 != 0 {
            z = z.mul_prec(&f, prec).unwrap_or_else(|_| Number::zero());
        }
        f = f.mul_prec(&f, prec).unwrap_or_else(|_| Number::zero());
        n >>= 1;
    }
    z
}

/// A decimal `0.d1d2d3… × 10^exp` with no trailing zeros (Go's `decimal`).
struct Decimal {
    mant: Vec<u8>,
    exp: i64,
}

impl Decimal {
    fn of(x: &Number) -> Decimal {
        match &x.form {
            Form::Finite { mant, exp } => Decimal::exact(mant.big(), *exp),
            _ => Decimal {
                mant: Vec::new(),
                exp: 0,
            },
        }
    }

    /// The exact decimal digits of `m × 2^e`.
    fn exact(m: BigUint, e: i64) -> Decimal {
        if m.is_zero() {
            return Decimal {
                mant: Vec::new(),
                exp: 0,
            };
        }
        let (digits, point_shift) = if e >= 0 {
            ((m << u64::try_from(e).unwrap_or(0)).to_string(), 0)
        } else {
            let k = e.unsigned_abs();
            let five = num_traits::pow::pow(BigUint::from(5u8), usize::try_from(k).unwrap_or(0));
            ((m * five).to_string(), i64::try_from(k).unwrap_or(0))
        };
        let n = i64::try_from(digits.len()).unwrap_or(0);
        let mut mant = digits.into_bytes();
        while mant.last() == Some(&b'0') {
            mant.pop();
        }
        Decimal {
            mant,
            exp: n - point_shift,
        }
    }

    fn at(&self, i: i64) -> u8 {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.mant.get(i).copied())
            .unwrap_or(b'0')
    }

    fn trim(&mut self) {
        while self.mant.last() == Some(&b'0') {
            self.mant.pop();
        }
        if self.mant.is_empty() {
            self.exp = 0;
        }
    }

    fn round(&mut self, n: i64) {
        let Ok(n) = usize::try_from(n) else {
            self.mant.clear();
            self.exp = 0;
            return;
        };
        if n >= self.mant.len() {
            return;
        }
        let up = if self.mant[n] == b'5' && n + 1 == self.mant.len() {
            n > 0 && (self.mant[n - 1] - b'0') & 1 != 0
        } else {
            self.mant[n] >= b'5'
        };
        if up {
            self.round_up(n);
        } else {
            self.round_down(n);
        }
    }

    fn round_up(&mut self, n: usize) {
        if n >= self.mant.len() {
            return;
        }
        let mut n = n;
        while n > 0 && self.mant[n - 1] >= b'9' {
            n -= 1;
        }
        if n == 0 {
            self.mant.clear();
            self.mant.push(b'1');
            self.exp += 1;
            return;
        }
        self.mant[n - 1] += 1;
        self.mant.truncate(n);
    }

    fn round_down(&mut self, n: usize) {
        if n >= self.mant.len() {
            return;
        }
        self.mant.truncate(n);
        self.trim();
    }

    /// Go's `roundShortest`: the fewest digits that still read back as `x` at its precision.
    fn round_shortest(&mut self, x: &Number) {
        let Form::Finite { mant, exp } = &x.form else {
            return;
        };
        if self.mant.is_empty() {
            return;
        }
        // mant with exactly prec + 1 bits: its lowest bit is half an ulp of x.
        let m = mant.big();
        let bits = i64::try_from(m.bits()).unwrap_or(0);
        let s = bits - (i64::from(x.prec) + 1);
        let (m, e) = if s < 0 {
            (m << s.unsigned_abs(), exp + s)
        } else {
            (m >> s.unsigned_abs(), exp + s)
        };
        let lower = Decimal::exact(&m - 1u8, e);
        let upper = Decimal::exact(&m + 1u8, e);
        let inclusive = !m.bit(1);
        // The digits are compared position by position, as Go does, without aligning the
        // bounds' exponents with this decimal's.
        for i in 0..self.mant.len() {
            let ii = i64::try_from(i).unwrap_or(0);
            let l = lower.at(ii);
            let u = upper.at(ii);
            let d = self.mant[i];
            let okdown = l != d || inclusive && i + 1 == lower.mant.len();
            let okup = d != u && (inclusive || d + 1 < u || i + 1 < upper.mant.len());
            match (okdown, okup) {
                (true, true) => {
                    self.round(ii + 1);
                    return;
                }
                (true, false) => {
                    self.round_down(i + 1);
                    return;
                }
                (false, true) => {
                    self.round_up(i + 1);
                    return;
                }
                (false, false) => {}
            }
        }
    }
}

fn fmt_f(out: &mut String, prec: i64, d: &Decimal) {
    if d.exp > 0 {
        let len = i64::try_from(d.mant.len()).unwrap_or(0);
        let m = len.min(d.exp);
        for &c in &d.mant[..usize::try_from(m).unwrap_or(0)] {
            out.push(char::from(c));
        }
        for _ in m..d.exp {
            out.push('0');
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 0..prec {
            out.push(char::from(d.at(d.exp + i)));
        }
    }
}

fn fmt_e(out: &mut String, format: char, prec: i64, d: &Decimal) {
    out.push(char::from(d.mant.first().copied().unwrap_or(b'0')));
    if prec > 0 {
        out.push('.');
        let len = i64::try_from(d.mant.len()).unwrap_or(0);
        let m = len.min(prec + 1);
        let mut i = 1;
        while i < m {
            out.push(char::from(d.mant[usize::try_from(i).unwrap_or(0)]));
            i += 1;
        }
        while i <= prec {
            out.push('0');
            i += 1;
        }
    }
    out.push(format);
    let exp = if d.mant.is_empty() { 0 } else { d.exp - 1 };
    out.push(if exp < 0 { '-' } else { '+' });
    let exp = exp.abs();
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.equals(other)
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_text())
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl From<&Number> for Number {
    fn from(v: &Number) -> Number {
        v.clone()
    }
}

impl From<i64> for Number {
    fn from(v: i64) -> Number {
        Number::from_i64(v)
    }
}

impl From<i32> for Number {
    fn from(v: i32) -> Number {
        Number::from_i64(i64::from(v))
    }
}

impl From<u32> for Number {
    fn from(v: u32) -> Number {
        Number::from_u64(u64::from(v))
    }
}

impl From<u64> for Number {
    fn from(v: u64) -> Number {
        Number::from_u64(v)
    }
}

impl From<usize> for Number {
    fn from(v: usize) -> Number {
        Number::from_u64(u64::try_from(v).unwrap_or(u64::MAX))
    }
}

/// A double at 53 bits; NaN (which no language operation makes) becomes zero.
impl From<f64> for Number {
    fn from(v: f64) -> Number {
        Number::from_f64(v).unwrap_or_else(Number::zero)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Number {
        Number::parse(s).unwrap()
    }

    #[test]
    fn literals_keep_every_digit_and_print_the_shortest() {
        assert_eq!(p("9007199254740993").to_text(), "9007199254740993");
        assert_eq!(p("0.1").to_text(), "0.1");
        assert_eq!(p("0.1").add(&p("0.2")).unwrap().to_text(), "0.3");
        assert!(p("0.1").add(&p("0.2")).unwrap().equals(&p("0.3")));
        assert_eq!(p("-0").to_text(), "-0");
        assert_eq!(p("1e3").to_text(), "1000");
        assert_eq!(p("1.5e-7").to_text(), "0.00000015");
    }

    #[test]
    fn precision_follows_the_origin() {
        // A double printed at its own precision, and at 512 bits after an operation.
        let root = Number::from(2f64.sqrt());
        assert_eq!(root.to_text(), "1.4142135623730951");
        assert_eq!(
            root.add(&p("0")).unwrap().to_text(),
            "1.4142135623730951454746218587388284504413604736328125"
        );
        assert_eq!(
            Number::from(2f64.powi(64)).to_text(),
            "18446744073709550000"
        );
    }

    #[test]
    fn division_and_infinities_as_go_has_them() {
        let third = p("1").div(&p("3")).unwrap();
        assert!(third.to_text().starts_with("0.3333333333"));
        assert!(third.to_text().ends_with("35"));
        assert!(p("1").div(&p("0")).unwrap().is_infinite());
        assert_eq!(p("0").div(&p("0")), Err(NotANumber));
        assert_eq!(p("1e300").mul(&p("1e10")).unwrap().to_text().len(), 311);
    }

    #[test]
    fn doubles_round_trip() {
        for v in [0.1, 1.5, -2.25, 1e300, 5e-324, 123456789.0] {
            assert_eq!(Number::from(v).to_f64(), v);
        }
        assert_eq!(p("0.1").to_f64(), 0.1);
        assert_eq!(p("1e400").to_f64(), f64::INFINITY);
    }

    #[test]
    fn go_formats() {
        assert_eq!(p("1234567").text('g', -1), "1.234567e+06");
        assert_eq!(p("0.000001234").text('g', -1), "1.234e-06");
        assert_eq!(p("3.14159").text('f', 1), "3.1");
        assert_eq!(p("12345678901234567890").text('e', 6), "1.234568e+19");
    }
}
