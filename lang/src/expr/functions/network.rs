//! IP network functions with Terraform's rules: `cidrhost`, `cidrnetmask`, `cidrsubnet` and
//! `cidrsubnets`. The address of a prefix is its network address (host bits are ignored), and a
//! negative host number counts from the end of the range.

use super::*;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A parsed prefix: its network address as an integer of `bits` bits (32 or 128).
struct Prefix {
    bits: u32,
    base: u128,
    len: u32,
}

fn mask(bits: u32, len: u32) -> u128 {
    let all = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    if len == 0 {
        0
    } else {
        (all << (bits - len)) & all
    }
}

fn prefix(a: &Args<'_>, i: usize) -> CallResult<Prefix> {
    let text = a.string(i)?;
    let invalid = || {
        a.error(
            i,
            format!("invalid CIDR expression: invalid CIDR address: {text}"),
        )
    };
    let (address, len) = text.split_once('/').ok_or_else(invalid)?;
    let address: IpAddr = address.parse().map_err(|_| invalid())?;
    if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let len: u32 = len.parse().map_err(|_| invalid())?;
    let (bits, value) = match address {
        IpAddr::V4(v4) => (32, u128::from(u32::from(v4))),
        IpAddr::V6(v6) => (128, u128::from(v6)),
    };
    if len > bits {
        return Err(invalid());
    }
    Ok(Prefix {
        bits,
        base: value & mask(bits, len),
        len,
    })
}

fn address(bits: u32, value: u128) -> String {
    if bits == 32 {
        Ipv4Addr::from(value as u32).to_string()
    } else {
        Ipv6Addr::from(value).to_string()
    }
}

pub(super) fn cidrhost(a: &Args<'_>) -> CallResult {
    let p = prefix(a, 0)?;
    let number = a.int(1)?;
    let host_bits = p.bits - p.len;
    let hosts = if host_bits >= 127 {
        None
    } else {
        Some(1i128 << host_bits)
    };
    let n = i128::from(number);
    let host = if n < 0 { hosts.map_or(n, |h| h + n) } else { n };
    if host < 0 || hosts.is_some_and(|h| host >= h) {
        return Err(CallError::call(format!(
            "prefix of {} does not accommodate a host numbered {number}",
            p.len
        )));
    }
    ok_string(address(p.bits, p.base | host as u128))
}

pub(super) fn cidrnetmask(a: &Args<'_>) -> CallResult {
    let p = prefix(a, 0)?;
    if p.bits != 32 {
        return Err(a.error(
            0,
            format!("IPv6 addresses cannot have a netmask: {}", a.string(0)?),
        ));
    }
    ok_string(address(32, mask(32, p.len)))
}

pub(super) fn cidrsubnet(a: &Args<'_>) -> CallResult {
    let p = prefix(a, 0)?;
    let newbits = a.int(1)?;
    let netnum = a.int(2)?;
    if newbits < 0 {
        return Err(a.error(1, "must not be negative"));
    }
    if newbits > 32 {
        return Err(CallError::call(
            "may not extend prefix by more than 32 bits",
        ));
    }
    let newbits = newbits as u32;
    let len = p.len + newbits;
    if len > p.bits {
        return Err(CallError::call(format!(
            "insufficient address space to extend prefix of {} by {newbits}",
            p.len
        )));
    }
    if netnum < 0 || (netnum as u128) > (1u128 << newbits) - 1 {
        return Err(CallError::call(format!(
            "prefix extension of {newbits} does not accommodate a subnet numbered {netnum}"
        )));
    }
    let net = p.base | ((netnum as u128) << (p.bits - len));
    ok_string(format!("{}/{len}", address(p.bits, net)))
}

/// Consecutive subnets of the given extensions, each aligned to its own size, as Terraform
/// allocates them (go-cidr's PreviousSubnet and NextSubnet).
pub(super) fn cidrsubnets(a: &Args<'_>) -> CallResult {
    let p = prefix(a, 0)?;
    if a.len() == 1 {
        return Ok(Value::List(vec![]));
    }
    let all = mask(p.bits, p.bits);
    let protocol = if p.bits == 32 { "IPv4" } else { "IPv6" };
    let first = a.int(1)?;
    let first_len = (i64::from(p.len) + first).clamp(0, i64::from(p.bits)) as u32;
    // The subnet just before the prefix, so that the first "next" one starts at its base.
    let mut current = (
        p.base.wrapping_sub(1) & all & mask(p.bits, first_len),
        first_len,
    );
    let mut out = Vec::with_capacity(a.len() - 1);
    for i in 1..a.len() {
        let extension = a.int(i)?;
        if extension < 1 {
            return Err(a.error(i, "must extend prefix by at least one bit"));
        }
        if extension > 32 {
            return Err(a.error(i, "may not extend prefix by more than 32 bits"));
        }
        let len = p.len + extension as u32;
        if len > p.bits {
            return Err(a.error(
                i,
                format!(
                    "would extend prefix to {len} bits, which is too long for an {protocol} address"
                ),
            ));
        }
        let current_last = current.0 | (!mask(p.bits, current.1) & all);
        let last_of_block = (current_last & mask(p.bits, len)) | (!mask(p.bits, len) & all);
        let next = last_of_block.wrapping_add(1) & all;
        if next == 0 || next & mask(p.bits, p.len) != p.base {
            return Err(a.error(i, format!(
                "not enough remaining address space for a subnet with a prefix of {len} bits after {}/{}",
                address(p.bits, current.0),
                current.1
            )));
        }
        current = (next, len);
        out.push(Value::String(format!("{}/{len}", address(p.bits, next))));
    }
    Ok(Value::List(out))
}
