//! The function library against Terraform's own answers. Every expectation is taken from the
//! example on the function's page of the Terraform language documentation
//! (developer.hashicorp.com/terraform/language/functions/NAME) unless its comment says
//! otherwise; digests and UUIDs were also checked against Python's hashlib and uuid.

#![allow(clippy::unwrap_used, clippy::panic)]

use gpustack_lang::expr::eval::{EmptyScope, Evaluator};
use serde_json::{Value as Json, json};

fn eval(src: &str) -> Result<Json, String> {
    let expr = hcl_edit::parser::parse_expr(src).map_err(|e| format!("parse {src}: {e}"))?;
    Evaluator::new(&EmptyScope)
        .eval(&expr)
        .map(|v| v.to_json())
        .map_err(|e| format!("{}: {}", e.summary, e.detail))
}

fn check(cases: &[(&str, Json)]) {
    let mut wrong = Vec::new();
    for (src, expected) in cases {
        match eval(src) {
            Ok(got) if got == *expected => {}
            Ok(got) => wrong.push(format!("{src}\n  expected {expected}\n  got      {got}")),
            Err(e) => wrong.push(format!("{src}\n  expected {expected}\n  failed   {e}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn check_errors(cases: &[(&str, &str)]) {
    let mut wrong = Vec::new();
    for (src, message) in cases {
        match eval(src) {
            Err(e) if e.contains(message) => {}
            Err(e) => wrong.push(format!(
                "{src}\n  expected an error with {message:?}\n  got {e}"
            )),
            Ok(v) => wrong.push(format!("{src}\n  expected an error, got {v}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn regular_expressions() {
    check(&[
        (
            r#"regex("[a-z]+", "53453453.345345aaabbbccc23454")"#,
            json!("aaabbbccc"),
        ),
        (
            r#"regex("(\\d\\d\\d\\d)-(\\d\\d)-(\\d\\d)", "2019-02-01")"#,
            json!(["2019", "02", "01"]),
        ),
        (
            r#"regex("^(?:(?P<scheme>[^:/?#]+):)?(?://(?P<authority>[^/?#]*))?", "https://terraform.io/docs/")"#,
            json!({"scheme": "https", "authority": "terraform.io"}),
        ),
        (
            r#"regexall("[a-z]+", "1234abcd5678efgh9")"#,
            json!(["abcd", "efgh"]),
        ),
        (
            r#"length(regexall("[a-z]+", "1234abcd5678efgh9"))"#,
            json!(2),
        ),
        (
            r#"length(regexall("[a-z]+", "123456789")) > 0"#,
            json!(false),
        ),
        (r#"replace("1 + 2 + 3", "+", "-")"#, json!("1 - 2 - 3")),
        (
            r#"replace("hello world", "/w.*d/", "everybody")"#,
            json!("hello everybody"),
        ),
        // Go's regexp expansion, which Terraform's replace uses: $1 and ${name}.
        (r#"replace("a-b", "/(\\w)-(\\w)/", "$2-$1")"#, json!("b-a")),
    ]);
    check_errors(&[(
        r#"regex("[a-z]+", "53453453.34534523454")"#,
        "pattern did not match any part of the given string",
    )]);
}

#[test]
fn ip_networks() {
    check(&[
        (r#"cidrhost("10.12.112.0/20", 16)"#, json!("10.12.112.16")),
        (r#"cidrhost("10.12.112.0/20", 268)"#, json!("10.12.113.12")),
        (
            r#"cidrhost("fd00:fd12:3456:7890:00a2::/72", 34)"#,
            json!("fd00:fd12:3456:7890::22"),
        ),
        // A negative host number counts from the end of the range (go-cidr's HostBig).
        (r#"cidrhost("10.0.0.0/8", -1)"#, json!("10.255.255.255")),
        (r#"cidrnetmask("172.16.0.0/12")"#, json!("255.240.0.0")),
        (
            r#"cidrsubnet("172.16.0.0/12", 4, 2)"#,
            json!("172.18.0.0/16"),
        ),
        (
            r#"cidrsubnet("10.1.2.0/24", 4, 15)"#,
            json!("10.1.2.240/28"),
        ),
        (
            r#"cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)"#,
            json!("fd00:fd12:3456:7800:a200::/72"),
        ),
        (
            r#"cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)"#,
            json!([
                "10.1.0.0/20",
                "10.1.16.0/20",
                "10.1.32.0/24",
                "10.1.48.0/20"
            ]),
        ),
        (
            r#"cidrsubnets("fd00:fd12:3456:7890::/56", 16, 16, 16, 32)"#,
            json!([
                "fd00:fd12:3456:7800::/72",
                "fd00:fd12:3456:7800:100::/72",
                "fd00:fd12:3456:7800:200::/72",
                "fd00:fd12:3456:7800:300::/88"
            ]),
        ),
    ]);
    // Terraform's messages (go-cidr's and its own).
    check_errors(&[
        (
            r#"cidrsubnet("10.0.0.0/30", 4, 0)"#,
            "insufficient address space to extend prefix of 30 by 4",
        ),
        (
            r#"cidrsubnet("10.0.0.0/24", 4, 16)"#,
            "prefix extension of 4 does not accommodate a subnet numbered 16",
        ),
        (
            r#"cidrhost("10.0.0.0/30", 4)"#,
            "prefix of 30 does not accommodate a host numbered 4",
        ),
        (
            r#"cidrnetmask("fd00::/56")"#,
            "IPv6 addresses cannot have a netmask",
        ),
        (
            r#"cidrsubnets("10.0.0.0/24", 1, 1, 1)"#,
            "not enough remaining address space",
        ),
        (r#"cidrhost("10.0.0/8", 1)"#, "invalid CIDR address"),
    ]);
}

#[test]
fn dates_and_times() {
    check(&[
        (
            r#"formatdate("DD MMM YYYY hh:mm ZZZ", "2018-01-02T23:12:01Z")"#,
            json!("02 Jan 2018 23:12 UTC"),
        ),
        (
            r#"formatdate("EEEE, DD-MMM-YY hh:mm:ss ZZZ", "2018-01-02T23:12:01Z")"#,
            json!("Tuesday, 02-Jan-18 23:12:01 UTC"),
        ),
        (
            r#"formatdate("EEE, DD MMM YYYY hh:mm:ss ZZZ", "2018-01-02T23:12:01-08:00")"#,
            json!("Tue, 02 Jan 2018 23:12:01 -0800"),
        ),
        (
            r#"formatdate("MMM DD, YYYY", "2018-01-02T23:12:01Z")"#,
            json!("Jan 02, 2018"),
        ),
        (
            r#"formatdate("HH:mmaa", "2018-01-02T23:12:01Z")"#,
            json!("11:12pm"),
        ),
        (
            r#"formatdate("h'h'mm", "2018-01-02T23:12:01-08:00")"#,
            json!("23h12"),
        ),
        (
            r#"formatdate("H 'o''clock'", "2018-01-02T23:12:01-08:00")"#,
            json!("11 o'clock"),
        ),
        (
            r#"timeadd("2017-11-22T00:00:00Z", "10m")"#,
            json!("2017-11-22T00:10:00Z"),
        ),
        // Go durations: negative, fractional and compound (time.ParseDuration); the offset of
        // the timestamp is kept (time.Time.Add, then Format(time.RFC3339)).
        (
            r#"timeadd("2017-11-22T00:00:00Z", "-1h30m")"#,
            json!("2017-11-21T22:30:00Z"),
        ),
        (
            r#"timeadd("2017-11-22T00:00:00+01:00", "1.5h")"#,
            json!("2017-11-22T01:30:00+01:00"),
        ),
        (
            r#"timeadd("2016-02-28T23:00:00Z", "2h")"#,
            json!("2016-02-29T01:00:00Z"),
        ),
        (
            r#"timecmp("2017-11-22T00:00:00Z", "2017-11-22T00:00:00Z")"#,
            json!(0),
        ),
        (
            r#"timecmp("2017-11-22T00:00:00Z", "2017-11-22T01:00:00Z")"#,
            json!(-1),
        ),
        (
            r#"timecmp("2017-11-22T01:00:00Z", "2017-11-22T00:00:00Z")"#,
            json!(1),
        ),
        (
            r#"timecmp("2017-11-22T01:00:00Z", "2017-11-22T00:00:00-01:00")"#,
            json!(0),
        ),
    ]);
    check_errors(&[
        (
            r#"timeadd("2017-11-22", "1h")"#,
            "not a valid RFC3339 timestamp",
        ),
        (
            r#"timeadd("2017-11-22T00:00:00Z", "1 hour")"#,
            "invalid duration",
        ),
        (
            r#"formatdate("YYY", "2018-01-02T23:12:01Z")"#,
            "invalid date format verb",
        ),
    ]);
}

#[test]
fn hashes_uuids_and_encodings() {
    check(&[
        (
            r#"md5("hello world")"#,
            json!("5eb63bbbe01eeed093cb22bb8f5acdc3"),
        ),
        (
            r#"sha1("hello world")"#,
            json!("2aae6c35c94fcfb415dbe95f408b9ce91ee846ed"),
        ),
        (
            r#"sha256("hello world")"#,
            json!("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"),
        ),
        (
            r#"uuidv5("dns", "www.terraform.io")"#,
            json!("a5008fae-b28c-5ba5-96cd-82b4c53552d6"),
        ),
        (
            r#"uuidv5("url", "https://www.terraform.io/")"#,
            json!("9db6f67c-dd95-5ea0-aa5b-e70e5c5f7cf5"),
        ),
        (
            r#"uuidv5("oid", "1.3.6.1.4")"#,
            json!("af9d40a5-7a36-5c07-b23a-851cd99fbfa5"),
        ),
        (
            r#"uuidv5("x500", "CN=Example,C=GB")"#,
            json!("84e09961-4aa4-57f8-95b7-03edb1073253"),
        ),
        (
            r#"uuidv5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.terraform.io")"#,
            json!("a5008fae-b28c-5ba5-96cd-82b4c53552d6"),
        ),
        (r#"base64encode("Hello World")"#, json!("SGVsbG8gV29ybGQ=")),
        (r#"base64decode("SGVsbG8gV29ybGQ=")"#, json!("Hello World")),
        (
            r#"csvdecode("a,b,c\n1,2,3\n4,5,6")"#,
            json!([{"a": "1", "b": "2", "c": "3"}, {"a": "4", "b": "5", "c": "6"}]),
        ),
        (
            r#"jsonencode({"hello"="world"})"#,
            json!("{\"hello\":\"world\"}"),
        ),
        (r#"urlencode("Hello World!")"#, json!("Hello+World%21")),
    ]);
    check_errors(&[(r#"csvdecode("a,b\n1,2,3")"#, "wrong number of fields")]);
}

/// `base64gzip` cannot be compared byte for byte (Go's deflate and this one differ); what the
/// bytes decompress to can.
#[test]
fn base64gzip_decompresses_to_its_input() {
    use base64::Engine as _;
    use std::io::Read as _;
    let Json::String(encoded) = eval(r#"base64gzip("test")"#).unwrap() else {
        panic!("not a string")
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes.as_slice())
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "test");
}

#[test]
fn paths() {
    check(&[
        (r#"basename("foo/bar/baz.txt")"#, json!("baz.txt")),
        (r#"dirname("foo/bar/baz.txt")"#, json!("foo/bar")),
        // Go's filepath.Base and filepath.Dir, which Terraform calls.
        (r#"basename("foo/bar/")"#, json!("bar")),
        (r#"basename("")"#, json!(".")),
        (r#"dirname("baz.txt")"#, json!(".")),
        (r#"dirname("/")"#, json!("/")),
        (r#"abspath("/a/b/../c/./d")"#, json!("/a/c/d")),
        (r#"pathexpand("/etc/hosts")"#, json!("/etc/hosts")),
    ]);
    let home = std::env::var("HOME").unwrap();
    check(&[(
        r#"pathexpand("~/.ssh/id_rsa")"#,
        json!(format!("{home}/.ssh/id_rsa")),
    )]);
}

#[test]
fn strings_numbers_and_collections() {
    check(&[
        (r#"chomp("hello\n")"#, json!("hello")),
        (r#"format("Hello, %s!", "Ander")"#, json!("Hello, Ander!")),
        (
            r#"format("There are %d lights", 4)"#,
            json!("There are 4 lights"),
        ),
        (
            r#"formatlist("Hello, %s!", ["Valentina", "Ander", "Olivia", "Sam"])"#,
            json!([
                "Hello, Valentina!",
                "Hello, Ander!",
                "Hello, Olivia!",
                "Hello, Sam!"
            ]),
        ),
        // Every newline is followed by the padding, the last one too (Go's strings.Replace).
        (
            r#"indent(2, "[\n  foo,\n  bar,\n]\n")"#,
            json!("[\n    foo,\n    bar,\n  ]\n  "),
        ),
        (
            r#"join(", ", ["foo", "bar", "baz"])"#,
            json!("foo, bar, baz"),
        ),
        (r#"split(",", "foo,bar,baz")"#, json!(["foo", "bar", "baz"])),
        (r#"strrev("hello")"#, json!("olleh")),
        (r#"substr("hello world", 1, 4)"#, json!("ello")),
        (r#"substr("hello world", -5, -1)"#, json!("world")),
        (r#"title("hello world")"#, json!("Hello World")),
        (r#"trim("?!hello?!", "!?")"#, json!("hello")),
        (r#"trimspace("  hello\n\n")"#, json!("hello")),
        (r#"upper("hello")"#, json!("HELLO")),
        (r#"abs(-12.4)"#, json!(12.4)),
        (r#"ceil(5.1)"#, json!(6)),
        (r#"floor(4.9)"#, json!(4)),
        (r#"log(16, 2)"#, json!(4)),
        (r#"max(12, 54, 3)"#, json!(54)),
        (r#"parseint("FF", 16)"#, json!(255)),
        (r#"parseint("-10", 16)"#, json!(-16)),
        (r#"pow(3, 2)"#, json!(9)),
        (r#"signum(-13)"#, json!(-1)),
        (
            r#"chunklist(["a", "b", "c", "d", "e"], 2)"#,
            json!([["a", "b"], ["c", "d"], ["e"]]),
        ),
        (r#"coalesce("", "b")"#, json!("b")),
        (r#"compact(["a", "", "b", "c"])"#, json!(["a", "b", "c"])),
        (
            r#"concat(["a", ""], ["b", "c"])"#,
            json!(["a", "", "b", "c"]),
        ),
        (r#"contains(["a", "b", "c"], "a")"#, json!(true)),
        (
            r#"distinct(["a", "b", "a", "c", "d", "b"])"#,
            json!(["a", "b", "c", "d"]),
        ),
        (r#"element(["a", "b", "c"], 3)"#, json!("a")),
        (
            r#"flatten([["a", "b"], [], ["c"]])"#,
            json!(["a", "b", "c"]),
        ),
        (r#"keys({a=1, c=2, d=3})"#, json!(["a", "c", "d"])),
        (r#"length({"a" = "b"})"#, json!(1)),
        (r#"lookup({a="ay", b="bee"}, "c", "what?")"#, json!("what?")),
        (
            r#"merge({a="b", c="d"}, {e="f", c="z"})"#,
            json!({"a": "b", "c": "z", "e": "f"}),
        ),
        (r#"range(1, 4)"#, json!([1, 2, 3])),
        (r#"range(0, -4, -1)"#, json!([0, -1, -2, -3])),
        (r#"reverse([1, 2, 3])"#, json!([3, 2, 1])),
        (
            r#"setproduct(["development", "staging"], ["app1", "app2"])"#,
            json!([
                ["development", "app1"],
                ["development", "app2"],
                ["staging", "app1"],
                ["staging", "app2"]
            ]),
        ),
        (r#"slice(["a", "b", "c", "d"], 1, 3)"#, json!(["b", "c"])),
        (r#"sort(["e", "d", "a", "x"])"#, json!(["a", "d", "e", "x"])),
        (r#"sum([10, 13, 6, 4.5])"#, json!(33.5)),
        (
            r#"transpose({"a" = ["1", "2"], "b" = ["2", "3"]})"#,
            json!({"1": ["a"], "2": ["a", "b"], "3": ["b"]}),
        ),
        (r#"values({a=3, c=2, d=1})"#, json!([3, 2, 1])),
        (r#"zipmap(["a", "b"], [1, 2])"#, json!({"a": 1, "b": 2})),
        (r#"one([])"#, json!(null)),
        (r#"alltrue(["true", true])"#, json!(true)),
        (r#"anytrue([])"#, json!(false)),
        // Splats, for expressions and conditionals (the expression pages of the documentation).
        (r#"[for s in ["a", "b"] : upper(s)]"#, json!(["A", "B"])),
        (
            r#"{for k, v in {a = 1, b = 2} : v => k}"#,
            json!({"1": "a", "2": "b"}),
        ),
        (r#"[{name = "x"}, {name = "y"}][*].name"#, json!(["x", "y"])),
        (r#"true ? "yes" : "no""#, json!("yes")),
        (
            r#""Hello, %{ if true }world%{ else }nobody%{ endif }!""#,
            json!("Hello, world!"),
        ),
        // Type conversions.
        (r#"tonumber("1")"#, json!(1)),
        (r#"tostring(true)"#, json!("true")),
        (r#"tobool("false")"#, json!(false)),
        (r#"tolist(["a", "b", 3])"#, json!(["a", "b", "3"])),
        (r#"tomap({"a" = 1, "b" = 2})"#, json!({"a": 1, "b": 2})),
        (r#"tonumber(null)"#, json!(null)),
    ]);
    check_errors(&[
        (r#"element([], 0)"#, "empty"),
        (r#"tonumber("no")"#, "number"),
        (r#"index(["a"], "b")"#, "item not found"),
    ]);
}

/// The file functions on a directory like the one on fileset's page: `files/hello.txt` and
/// `files/world.txt`, plus a nested file that only `**` reaches.
#[test]
fn files_and_file_digests() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(files.join("nested")).unwrap();
    std::fs::write(files.join("hello.txt"), "hello world").unwrap();
    std::fs::write(files.join("world.txt"), "world").unwrap();
    std::fs::write(files.join("nested").join("deep.txt"), "deep").unwrap();
    std::fs::write(files.join("template.tftpl"), "Hello, ${name}!").unwrap();
    let base = dir.path().display().to_string().replace('\\', "/");
    let hello = format!("{base}/files/hello.txt");
    check(&[
        (
            &format!(r#"fileset("{base}", "files/*.txt")"#),
            json!(["files/hello.txt", "files/world.txt"]),
        ),
        (
            &format!(r#"fileset("{base}/files", "*")"#),
            json!(["hello.txt", "template.tftpl", "world.txt"]),
        ),
        (
            &format!(r#"fileset("{base}", "{{files,other}}/*.txt")"#),
            json!(["files/hello.txt", "files/world.txt"]),
        ),
        (
            &format!(r#"fileset("{base}", "**/*.txt")"#),
            json!([
                "files/hello.txt",
                "files/nested/deep.txt",
                "files/world.txt"
            ]),
        ),
        // A directory that does not exist holds no files (Terraform returns an empty set).
        (&format!(r#"fileset("{base}/none", "*")"#), json!([])),
        // Digests of "hello world" as md5(), sha1() ... give them (checked with sha*sum).
        (
            &format!(r#"filebase64("{hello}")"#),
            json!("aGVsbG8gd29ybGQ="),
        ),
        (
            &format!(r#"filemd5("{hello}")"#),
            json!("5eb63bbbe01eeed093cb22bb8f5acdc3"),
        ),
        (
            &format!(r#"filesha1("{hello}")"#),
            json!("2aae6c35c94fcfb415dbe95f408b9ce91ee846ed"),
        ),
        (
            &format!(r#"filesha256("{hello}")"#),
            json!("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"),
        ),
        (
            &format!(r#"filebase64sha256("{hello}")"#),
            json!("uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="),
        ),
        (&format!(r#"length(filesha512("{hello}"))"#), json!(128)),
        (
            &format!(r#"templatefile("{base}/files/template.tftpl", {{ name = "Sam" }})"#),
            json!("Hello, Sam!"),
        ),
        // templatestring's page: the template comes from a value, not a file (written here
        // with $${ so that the literal itself does not interpolate).
        (
            r#"templatestring("Hello, $${name}!", { name = "Olivia" })"#,
            json!("Hello, Olivia!"),
        ),
    ]);
    // The file functions read text: a file that is not UTF-8 is refused, not mangled.
    std::fs::write(files.join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
    check_errors(&[
        (
            &format!(r#"filemd5("{base}/files/missing.txt")"#),
            "no such file",
        ),
        (&format!(r#"filebase64("{base}/files/blob.bin")"#), "UTF-8"),
        (&format!(r#"fileset("{base}", "[")"#), "invalid pattern"),
        (r#"templatestring("${missing}", {})"#, "missing"),
    ]);
}

/// `timestamp()` and `plantimestamp()` are one instant for the whole plan, in the RFC 3339
/// form Terraform prints (whole seconds, `Z`); `uuid()` is a random version 4 UUID.
#[test]
fn the_clock_and_random_uuids() {
    let at = eval("timestamp()").unwrap();
    let at = at.as_str().unwrap().to_owned();
    let shape = regex_shape(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$");
    assert!(shape.is_match(&at), "{at}");
    assert_eq!(eval("plantimestamp()").unwrap(), json!(at));
    assert_eq!(
        eval(r#"timecmp(timestamp(), "2020-01-01T00:00:00Z")"#).unwrap(),
        json!(1)
    );
    let a = eval("uuid()").unwrap();
    let b = eval("uuid()").unwrap();
    assert_ne!(a, b);
    let uuid =
        regex_shape(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
    assert!(uuid.is_match(a.as_str().unwrap()), "{a}");
    check_errors(&[("timestamp(1)", "expects 0 argument")]);
}

fn regex_shape(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).unwrap()
}

/// The language around the functions, from the Terraform documentation's pages on strings and
/// templates, `for` expressions, splat expressions, type conversion and null (expectations as
/// those pages give them; unknown values are covered by the evaluator's own tests, which have
/// a scope to hold them).
#[test]
fn templates_for_expressions_splats_conversions_and_nulls() {
    check(&[
        // Strings and templates.
        (
            r#""Hello, %{ if "Juan" != "" }Juan%{ else }unnamed%{ endif }!""#,
            json!("Hello, Juan!"),
        ),
        (
            r#""%{ for ip in ["10.0.0.1", "10.0.0.2"] }server ${ip}
%{ endfor }""#,
            json!("server 10.0.0.1\nserver 10.0.0.2\n"),
        ),
        (
            r#""$${literal} and %%{directive}""#,
            json!("${literal} and %{directive}"),
        ),
        (r#""${1 + 2} items""#, json!("3 items")),
        // for expressions.
        (r#"[for s in ["a", "b"] : upper(s)]"#, json!(["A", "B"])),
        (
            r#"{for s in ["a", "b"] : s => upper(s)}"#,
            json!({"a": "A", "b": "B"}),
        ),
        (
            r#"[for s in ["a", "", "b"] : s if s != ""]"#,
            json!(["a", "b"]),
        ),
        (
            r#"{for s in ["a", "b", "a"] : s => s...}"#,
            json!({"a": ["a", "a"], "b": ["b"]}),
        ),
        (
            r#"[for k, v in { a = 1, b = 2 } : "${k}=${v}"]"#,
            json!(["a=1", "b=2"]),
        ),
        (
            r#"[for i, v in ["x", "y"] : "${i}:${v}"]"#,
            json!(["0:x", "1:y"]),
        ),
        // Splat expressions.
        (
            r#"[{ name = "a" }, { name = "b" }][*].name"#,
            json!(["a", "b"]),
        ),
        // A splat of a single value is a one-element list, of null an empty one.
        (r#"{ name = "a" }[*].name"#, json!(["a"])),
        (r#"null[*]"#, json!([])),
        // Type conversion: automatic where a type is expected, and the to* functions.
        (r#""1" + 1"#, json!(2)),
        (r#"tonumber("1")"#, json!(1)),
        (r#"tostring(1)"#, json!("1")),
        (r#"tobool("true")"#, json!(true)),
        (r#"tomap({ a = 1, b = "2" })"#, json!({"a": "1", "b": "2"})),
        (r#"toset(["b", "a", "b"])"#, json!(["a", "b"])),
        (r#"tolist(["a", "b"])"#, json!(["a", "b"])),
        // Null.
        (r#"null == null"#, json!(true)),
        (r#"null != "x""#, json!(true)),
        (r#"true ? null : "x""#, json!(null)),
        (r#"coalesce(null, "x")"#, json!("x")),
        // Numbers as Terraform prints them.
        (r#"10 / 4"#, json!(2.5)),
        (r#"7 % 3"#, json!(1)),
        (r#"-5 % 3"#, json!(-2)),
        // Strings by character, not byte (substr's page).
        (r#"substr("hello world", 1, 4)"#, json!("ello")),
        (r#"substr("🤔🤷", 0, 1)"#, json!("🤔")),
        (r#"join("-", [])"#, json!("")),
    ]);
    check_errors(&[
        (r#"tonumber("one")"#, "number"),
        (r#"[for s in 1 : s]"#, "for"),
        (r#"1 + "a""#, "number"),
    ]);
}

/// Text in other encodings (the examples of textencodebase64's and textdecodebase64's pages),
/// bcrypt (checked by verifying, since its salt is random) and rsadecrypt (of a ciphertext made
/// here with a key made here).
#[test]
fn text_encodings_bcrypt_and_rsadecrypt() {
    check(&[
        (
            r#"textencodebase64("Hello World", "UTF-16LE")"#,
            json!("SABlAGwAbABvACAAVwBvAHIAbABkAA=="),
        ),
        (
            r#"textdecodebase64("SABlAGwAbABvACAAVwBvAHIAbABkAA==", "UTF-16LE")"#,
            json!("Hello World"),
        ),
        (r#"textencodebase64("é", "ISO-8859-1")"#, json!("6Q==")),
        // ISO-8859-1 as IANA has it: U+0080 is the byte 0x80 (windows-1252 has no such byte).
        (r#"textdecodebase64("gA==", "ISO-8859-1")"#, json!("\u{80}")),
        // No value of gpustack is ephemeral: ephemeralasnull leaves every value as it is.
        (r#"ephemeralasnull({ a = "x" })"#, json!({"a": "x"})),
    ]);
    check_errors(&[
        (
            r#"textencodebase64("x", "NOT-AN-ENCODING")"#,
            "invalid encoding name",
        ),
        (r#"textencodebase64("é", "US-ASCII")"#, "cannot encode"),
    ]);

    let hash = eval(r#"bcrypt("hunter2", 4)"#).unwrap();
    let hash = hash.as_str().unwrap();
    assert!(hash.starts_with("$2a$04$"), "{hash}");
    assert!(bcrypt::verify("hunter2", hash).unwrap());
    check_errors(&[(r#"bcrypt("x", 3)"#, "cost")]);

    use base64::Engine as _;
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).unwrap();
    let pem = key.to_pkcs1_pem(rsa::pkcs1::LineEnding::LF).unwrap();
    let ciphertext = rsa::RsaPublicKey::from(&key)
        .encrypt(
            &mut rsa::rand_core::OsRng,
            rsa::Pkcs1v15Encrypt,
            b"gpu secret",
        )
        .unwrap();
    let ciphertext = base64::engine::general_purpose::STANDARD.encode(ciphertext);
    let expr = format!(
        "rsadecrypt(\"{ciphertext}\", \"{}\")",
        pem.as_str().replace('\n', "\\n")
    );
    assert_eq!(eval(&expr).unwrap(), json!("gpu secret"));
    check_errors(&[(
        r#"rsadecrypt("AAAA", "not a key")"#,
        "not an unencrypted RSA private key",
    )]);
}
