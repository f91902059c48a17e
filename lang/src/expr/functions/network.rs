//! IP network functions with OpenTofu's rules: `cidrhost`, `cidrnetmask`, `cidrsubnet`,
//! `cidrsubnets` and `cidrcontains`.
//!
//! OpenTofu parses addresses as Go did before 1.17 (an IPv4 octet may have leading zeros and
//! is decimal: `010.001.0.0` is `10.1.0.0`) and computes with Go's `net.IP` and go-cidr, whose
//! results follow from how they store an address: IPv4 in 4 bytes from a `/n` of 32 bits, or
//! in 16 bytes, IPv4-mapped (`::ffff:10.0.0.0/104`), where the mask has 128 bits but the
//! address prints as IPv4. This module models those types (an address is its bytes, 4 or 16)
//! so that every function answers as OpenTofu's does, the mapped forms' oddities included.

use super::*;
use num_bigint::BigUint;
use num_traits::ToPrimitive as _;

/// Go's `net.IPNet`: an address and a mask of the same or of the other length.
struct Net {
    ip: Vec<u8>,
    mask: Vec<u8>,
}

const V4_IN_V6: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Go's `dtoi`: a decimal prefix of `s` below 2^24, its value and length.
fn dtoi(s: &[u8]) -> Option<(usize, usize)> {
    const BIG: usize = 0xFF_FFFF;
    let mut n = 0usize;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + usize::from(s[i] - b'0');
        if n >= BIG {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// Go's `xtoi`: a hexadecimal prefix of `s`.
fn xtoi(s: &[u8]) -> Option<(usize, usize)> {
    const BIG: usize = 0xFF_FFFF;
    let mut n = 0usize;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_hexdigit() {
        n = n * 16 + char::from(s[i]).to_digit(16).map_or(0, |d| d as usize);
        if n >= BIG {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// An IPv4 address (leading zeros allowed), in its 16-byte IPv4-mapped form as Go's `IPv4`.
fn parse_ipv4(mut s: &[u8]) -> Option<Vec<u8>> {
    let mut p = [0u8; 4];
    for (i, slot) in p.iter_mut().enumerate() {
        if s.is_empty() {
            return None;
        }
        if i > 0 {
            if s[0] != b'.' {
                return None;
            }
            s = &s[1..];
        }
        let (n, c) = dtoi(s)?;
        *slot = u8::try_from(n).ok()?;
        s = &s[c..];
    }
    if !s.is_empty() {
        return None;
    }
    let mut ip = V4_IN_V6.to_vec();
    ip.extend_from_slice(&p);
    Some(ip)
}

fn parse_ipv6(mut s: &[u8]) -> Option<Vec<u8>> {
    let mut ip = vec![0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Some(ip);
        }
    }
    let mut i = 0;
    while i < 16 {
        let (n, c) = xtoi(s)?;
        if n > 0xFFFF {
            return None;
        }
        if c < s.len() && s[c] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return None;
            }
            if i + 4 > 16 {
                return None;
            }
            let ip4 = parse_ipv4(s)?;
            ip[i..i + 4].copy_from_slice(&ip4[12..16]);
            s = &[];
            i += 4;
            break;
        }
        ip[i] = (n >> 8) as u8;
        ip[i + 1] = n as u8;
        i += 2;
        s = &s[c..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return None;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return None;
    }
    if i < 16 {
        let e = ellipsis?;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in &mut ip[e..e + n] {
            *b = 0;
        }
    } else if ellipsis.is_some() {
        return None;
    }
    Some(ip)
}

/// Go's `ParseIP` as OpenTofu's copy of it has it: the first `.` or `:` decides the family.
fn parse_ip(s: &str) -> Option<Vec<u8>> {
    for b in s.bytes() {
        match b {
            b'.' => return parse_ipv4(s.as_bytes()),
            b':' => return parse_ipv6(s.as_bytes()),
            _ => {}
        }
    }
    None
}

fn cidr_mask(ones: usize, bits: usize) -> Vec<u8> {
    let mut m = vec![0u8; bits / 8];
    let mut n = ones;
    for b in &mut m {
        if n >= 8 {
            *b = 0xff;
            n -= 8;
            continue;
        }
        *b = !(0xffu8 >> n);
        n = 0;
    }
    m
}

/// Go's `IP.Mask`.
fn ip_mask(ip: &[u8], mask: &[u8]) -> Option<Vec<u8>> {
    let mut mask = mask;
    let mut ip = ip;
    if mask.len() == 16 && ip.len() == 4 && mask[..12].iter().all(|&b| b == 0xff) {
        mask = &mask[12..];
    }
    if mask.len() == 4 && ip.len() == 16 && ip[..12] == V4_IN_V6 {
        ip = &ip[12..];
    }
    if ip.len() != mask.len() {
        return None;
    }
    Some(ip.iter().zip(mask).map(|(a, b)| a & b).collect())
}

/// Go's `ParseCIDR` as OpenTofu's copy of it has it.
fn parse_cidr(s: &str) -> Result<Net, String> {
    let invalid = || format!("invalid CIDR address: {s}");
    let (addr, mask) = s.split_once('/').ok_or_else(invalid)?;
    let (ip, iplen) = match parse_ipv4(addr.as_bytes()) {
        Some(ip) => (ip, 4),
        None => (parse_ipv6(addr.as_bytes()).ok_or_else(invalid)?, 16),
    };
    let (n, i) = dtoi(mask.as_bytes()).ok_or_else(invalid)?;
    if i != mask.len() || n > 8 * iplen {
        return Err(invalid());
    }
    let m = cidr_mask(n, 8 * iplen);
    let network = ip_mask(&ip, &m).ok_or_else(invalid)?;
    Ok(Net {
        ip: network,
        mask: m,
    })
}

/// Go's `IP.To4`.
fn to4(ip: &[u8]) -> Option<&[u8]> {
    match ip.len() {
        4 => Some(ip),
        16 if ip[..12] == V4_IN_V6 => Some(&ip[12..]),
        _ => None,
    }
}

/// Go's `IP.String`: dotted when it is IPv4 in either form, else RFC 5952 hexadecimal.
fn ip_string(ip: &[u8]) -> String {
    if ip.is_empty() {
        return "<nil>".to_owned();
    }
    if let Some(v4) = to4(ip) {
        return format!("{}.{}.{}.{}", v4[0], v4[1], v4[2], v4[3]);
    }
    if ip.len() != 16 {
        return format!(
            "?{}",
            ip.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
    let group = |i: usize| u16::from_be_bytes([ip[2 * i], ip[2 * i + 1]]);
    let (mut zero_start, mut zero_end) = (usize::MAX, usize::MAX);
    let mut best = 0;
    for i in 0..8 {
        let mut j = i;
        while j < 8 && group(j) == 0 {
            j += 1;
        }
        if j - i >= 2 && j - i > best {
            best = j - i;
            zero_start = i;
            zero_end = j;
        }
    }
    let mut out = String::new();
    let mut i = 0;
    while i < 8 {
        if i == zero_start {
            out.push_str("::");
            i = zero_end;
            if i >= 8 {
                break;
            }
        } else if i > 0 {
            out.push(':');
        }
        out.push_str(&format!("{:x}", group(i)));
        i += 1;
    }
    out
}

/// Go's `simpleMaskLength`: the leading ones, or None when the mask is not canonical.
fn mask_length(mask: &[u8]) -> Option<usize> {
    let mut n = 0;
    for (i, &v) in mask.iter().enumerate() {
        if v == 0xff {
            n += 8;
            continue;
        }
        let ones = v.leading_ones() as usize;
        if v << ones != 0 || mask[i + 1..].iter().any(|&b| b != 0) {
            return None;
        }
        return Some(n + ones);
    }
    Some(n)
}

/// Go's `IPMask.Size`.
fn mask_size(mask: &[u8]) -> (usize, usize) {
    match mask_length(mask) {
        Some(ones) => (ones, mask.len() * 8),
        None => (0, 0),
    }
}

/// Go's `networkNumberAndMask`.
fn number_and_mask(n: &Net) -> Option<(Vec<u8>, Vec<u8>)> {
    let ip = match to4(&n.ip) {
        Some(v4) => v4.to_vec(),
        None if n.ip.len() == 16 => n.ip.clone(),
        None => return None,
    };
    let mask = match n.mask.len() {
        4 if ip.len() != 4 => return None,
        4 => n.mask.clone(),
        16 if ip.len() == 4 => n.mask[12..].to_vec(),
        16 => n.mask.clone(),
        _ => return None,
    };
    Some((ip, mask))
}

fn net_contains(n: &Net, ip: &[u8]) -> bool {
    let Some((nn, m)) = number_and_mask(n) else {
        return false;
    };
    let ip = to4(ip).unwrap_or(ip);
    ip.len() == nn.len() && (0..ip.len()).all(|i| nn[i] & m[i] == ip[i] & m[i])
}

fn net_string(n: &Net) -> String {
    let Some((nn, m)) = number_and_mask(n) else {
        return "<nil>".to_owned();
    };
    match mask_length(&m) {
        Some(l) => format!("{}/{l}", ip_string(&nn)),
        None => format!(
            "{}/{}",
            ip_string(&nn),
            m.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
    }
}

/// go-cidr's `ipToInt`: the address as a number of as many bits as it has bytes.
fn ip_to_int(ip: &[u8]) -> (BigUint, usize) {
    (BigUint::from_bytes_be(ip), ip.len() * 8)
}

/// go-cidr's `intToIP`: the low bytes of the number in an address of `bits` bits.
fn int_to_ip(n: &BigUint, bits: usize) -> Vec<u8> {
    let bytes = n.to_bytes_be();
    let len = bits / 8;
    let mut out = vec![0u8; len];
    for (i, b) in bytes.iter().rev().enumerate().take(len) {
        out[len - 1 - i] = *b;
    }
    out
}

/// go-cidr's `insertNumIntoIP`.
fn insert_num(ip: &[u8], num: &BigUint, prefix_len: usize) -> Vec<u8> {
    let (value, total) = ip_to_int(ip);
    let shifted = num << total.saturating_sub(prefix_len);
    int_to_ip(&(value | shifted), total)
}

fn address_range(n: &Net) -> (Vec<u8>, Vec<u8>) {
    let first = n.ip.clone();
    let (prefix_len, bits) = mask_size(&n.mask);
    if prefix_len == bits {
        return (first.clone(), first);
    }
    let (value, bits) = ip_to_int(&first);
    let host_len = bits.saturating_sub(prefix_len);
    let host: BigUint = (BigUint::from(1u8) << host_len) - 1u8;
    (first, int_to_ip(&(host | value), bits))
}

fn check_ipv4(ip: &[u8]) -> Vec<u8> {
    to4(ip).unwrap_or(ip).to_vec()
}

fn is_zero(ip: &[u8]) -> bool {
    ip.iter().all(|&b| b == 0) && (ip.len() == 4 || ip.len() == 16)
}

/// go-cidr's `PreviousSubnet`. A prefix longer than the address (an IPv4-mapped prefix made
/// IPv4) has no mask in Go: the subnet is Go's nil network, which contains nothing.
fn previous_subnet(n: &Net, prefix_len: usize) -> Net {
    let mut ip = check_ipv4(&n.ip);
    if prefix_len > ip.len() * 8 {
        return Net {
            ip: Vec::new(),
            mask: Vec::new(),
        };
    }
    let mask = cidr_mask(prefix_len, ip.len() * 8);
    for b in ip.iter_mut().rev() {
        *b = b.wrapping_sub(1);
        if *b < 255 {
            break;
        }
    }
    Net {
        ip: ip_mask(&ip, &mask).unwrap_or_default(),
        mask,
    }
}

/// go-cidr's `NextSubnet` and whether it wrapped around to zero.
fn next_subnet(n: &Net, prefix_len: usize) -> (Net, bool) {
    if n.ip.is_empty() {
        return (
            Net {
                ip: Vec::new(),
                mask: Vec::new(),
            },
            false,
        );
    }
    let (_, current_last) = address_range(n);
    let mask = cidr_mask(
        prefix_len.min(current_last.len() * 8),
        current_last.len() * 8,
    );
    let current = Net {
        ip: ip_mask(&current_last, &mask).unwrap_or_default(),
        mask: mask.clone(),
    };
    let (_, last) = address_range(&current);
    let mut last = check_ipv4(&last);
    for b in last.iter_mut().rev() {
        *b = b.wrapping_add(1);
        if *b > 0 {
            break;
        }
    }
    let rollover = is_zero(&last);
    (
        Net {
            ip: ip_mask(&last, &mask).unwrap_or_default(),
            mask,
        },
        rollover,
    )
}

fn network(a: &Args<'_>, i: usize) -> CallResult<Net> {
    parse_cidr(&a.string(i)?).map_err(|e| a.error(i, format!("invalid CIDR expression: {e}")))
}

/// A whole number of any size, as go-cty converts to `*big.Int`.
fn big_int(a: &Args<'_>, i: usize) -> CallResult<(bool, BigUint)> {
    let n = a.number(i)?;
    if !n.is_integer() {
        return Err(a.error(i, "number must be a whole number"));
    }
    n.trunc_parts()
        .ok_or_else(|| a.error(i, "number must be a whole number"))
}

pub(super) fn cidrhost(a: &Args<'_>) -> CallResult {
    let (negative, magnitude) = big_int(a, 1)?;
    let net = network(a, 0)?;
    let (parent_len, addr_len) = mask_size(&net.mask);
    let host_len = addr_len.saturating_sub(parent_len);
    let max: BigUint = (BigUint::from(1u8) << host_len) - 1u8;
    // go-cidr counts a negative number back from the end: -1 is the last address.
    let (num, count) = if negative {
        let back = &magnitude - 1u8;
        if back > max {
            return Err(CallError::call(format!(
                "prefix of {parent_len} does not accommodate a host numbered -{magnitude}"
            )));
        }
        (&max - &back, back)
    } else {
        (magnitude.clone(), magnitude)
    };
    if count > max {
        return Err(CallError::call(format!(
            "prefix of {parent_len} does not accommodate a host numbered {num}"
        )));
    }
    let bits = if to4(&net.ip).is_some() { 32 } else { 128 };
    ok_string(ip_string(&insert_num(&net.ip, &num, bits)))
}

pub(super) fn cidrnetmask(a: &Args<'_>) -> CallResult {
    let net = network(a, 0)?;
    if to4(&net.ip).is_none() {
        return Err(CallError::call(format!(
            "IPv6 addresses cannot have a netmask: {}",
            a.string(0)?
        )));
    }
    ok_string(ip_string(&net.mask))
}

pub(super) fn cidrsubnet(a: &Args<'_>) -> CallResult {
    let newbits = a.int(1)?;
    let (negative, netnum) = big_int(a, 2)?;
    let net = network(a, 0)?;
    let (parent_len, addr_len) = mask_size(&net.mask);
    let new_len = i64::try_from(parent_len).unwrap_or(0) + newbits;
    if newbits < 0 || new_len > i64::try_from(addr_len).unwrap_or(0) {
        return Err(CallError::call(format!(
            "insufficient address space to extend prefix of {parent_len} by {newbits}"
        )));
    }
    let new_len = usize::try_from(new_len).unwrap_or(0);
    let max = if newbits >= 64 {
        u64::MAX
    } else {
        (1u64 << newbits) - 1
    };
    if negative || netnum.to_u64().is_none_or(|n| n > max) {
        return Err(CallError::call(format!(
            "prefix extension of {newbits} does not accommodate a subnet numbered {}{netnum}",
            if negative { "-" } else { "" }
        )));
    }
    ok_string(net_string(&Net {
        ip: insert_num(&net.ip, &netnum, new_len),
        mask: cidr_mask(new_len, addr_len),
    }))
}

/// Consecutive subnets of the given extensions, each aligned to its own size, as go-cidr's
/// `PreviousSubnet` and `NextSubnet` allocate them.
pub(super) fn cidrsubnets(a: &Args<'_>) -> CallResult {
    let net = network(a, 0)?;
    let (start_len, _) = mask_size(&net.mask);
    if a.len() == 1 {
        return Ok(Value::List(vec![]));
    }
    let first = a.int(1)?;
    let first_len = usize::try_from(first + i64::try_from(start_len).unwrap_or(0)).unwrap_or(0);
    let mut current = previous_subnet(&net, first_len);
    let bits = net.ip.len() * 8;
    let mut out = Vec::with_capacity(a.len() - 1);
    for i in 1..a.len() {
        let extension = a.int(i)?;
        if extension < 1 {
            return Err(a.error(i, "must extend prefix by at least one bit"));
        }
        if extension > 32 {
            return Err(a.error(i, "may not extend prefix by more than 32 bits"));
        }
        let len = usize::try_from(extension).unwrap_or(0) + start_len;
        if len > bits {
            let protocol = if bits == 32 { "IPv4" } else { "IPv6" };
            return Err(a.error(
                i,
                format!(
                    "would extend prefix to {len} bits, which is too long for an {protocol} address"
                ),
            ));
        }
        let (next, rollover) = next_subnet(&current, len);
        if rollover || !net_contains(&net, &next.ip) {
            return Err(a.error(
                i,
                format!(
                    "not enough remaining address space for a subnet with a prefix of {len} bits after {}",
                    net_string(&current)
                ),
            ));
        }
        out.push(Value::String(net_string(&next)));
        current = next;
    }
    Ok(Value::List(out))
}

/// OpenTofu's `cidrcontains`: an address, or every address of a prefix, inside a prefix of
/// the same family.
pub(super) fn cidrcontains(a: &Args<'_>) -> CallResult {
    let prefix = a.string(0)?;
    let addr = a.string(1)?;
    let containing = parse_cidr(&prefix).map_err(CallError::call)?;
    let (start, end) = match parse_ip(&addr) {
        Some(ip) => (ip, None),
        None => {
            let contained = parse_cidr(&addr)
                .map_err(|_| CallError::call(format!("invalid IP address or prefix: {addr}")))?;
            let (first, last) = address_range(&contained);
            (first, Some(last))
        }
    };
    if to4(&start).is_none() != to4(&containing.ip).is_none() {
        return Err(CallError::call(format!(
            "address family mismatch: {prefix} vs. {addr}"
        )));
    }
    let inside = net_contains(&containing, &start)
        && end.is_none_or(|last| net_contains(&containing, &last));
    Ok(Value::Bool(inside))
}
