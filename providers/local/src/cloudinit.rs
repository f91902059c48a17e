//! hashicorp/cloudinit: `data "cloudinit_config"` and the deprecated resource of the same
//! name, a MIME multi-part document of cloud-init parts, gzipped and base64-encoded by
//! default, byte for byte as the provider writes it (Go's `mime/multipart`).

use crate::state_only::{attr, flag, plan_made, text, with};
use base64::Engine;
use gpustack_protocol::{
    ApplyResourceChangeRequest, ApplyResourceChangeResponse, Attribute, BlockNesting, Diagnostic,
    PlanResourceChangeRequest, PlanResourceChangeResponse, Provider, ProviderFactory,
    ProviderSchema, ReadDataSourceRequest, ReadDataSourceResponse, ResourceMode, Schema, Type,
    Value,
};
use gpustack_provider_sdk::check::{Checker, provider_config};
use gpustack_provider_sdk::family::{Factory, Family};
use std::io::Write;
use std::sync::Arc;

#[derive(Clone, Copy)]
pub(crate) struct Cloudinit;

/// The provider, for a registry.
pub fn provider() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(Cloudinit))
}

fn schema(resource: bool) -> Schema {
    // Every argument of the resource replaces it.
    let argument = |ty: Type, computed: bool| {
        let a = if computed {
            Attribute::optional_computed(ty)
        } else {
            Attribute::optional(ty)
        };
        if resource { a.force_new() } else { a }
    };
    let content = if resource {
        Attribute::required(Type::String).force_new()
    } else {
        Attribute::required(Type::String)
    };
    let part = Schema::new("One part of the document.")
        .attr(
            "content_type",
            argument(Type::String, true).describe("Its MIME type (default text/plain)."),
        )
        .attr("content", content)
        .attr("filename", argument(Type::String, false))
        .attr("merge_type", argument(Type::String, false));
    let mut schema = Schema::new("A cloud-init MIME multi-part document.")
        .attr(
            "gzip",
            argument(Type::Bool, true).describe("Compress the document (default true)."),
        )
        .attr(
            "base64_encode",
            argument(Type::Bool, true).describe("Encode it in base64 (default true)."),
        )
        .attr(
            "boundary",
            argument(Type::String, true).describe("The MIME boundary (default MIMEBOUNDARY)."),
        )
        .attr("rendered", Attribute::computed(Type::String))
        .attr("id", Attribute::computed(Type::String))
        .block("part", BlockNesting::List, part);
    if let Some(part) = schema.blocks.get_mut("part") {
        part.min_items = 1;
    }
    schema
}

fn schemas() -> ProviderSchema {
    ProviderSchema {
        name: "cloudinit".into(),
        config: provider_config("hashicorp/cloudinit: cloud-init documents."),
        resources: [("cloudinit_config".to_owned(), schema(true))].into(),
        data_sources: [("cloudinit_config".to_owned(), schema(false))].into(),
    }
}

#[async_trait::async_trait]
impl Family for Cloudinit {
    fn types(&self) -> gpustack_protocol::ProviderTypes {
        gpustack_provider_sdk::family::named_types(
            "cloudinit",
            &["cloudinit_config"],
            &["cloudinit_config"],
        )
    }

    fn schema(&self) -> ProviderSchema {
        schemas()
    }

    fn check(&self, _: &str, check: &mut Checker<'_>) {
        let gzip = !matches!(check.get("gzip"), Some(Value::Bool(false)));
        if gzip && matches!(check.get("base64_encode"), Some(Value::Bool(false))) {
            check.error(
                "base64_encode",
                "Invalid Attribute Configuration",
                "Expected base64_encode to be set to true when gzip is true.".into(),
            );
        }
        if let Some(boundary) = check.str("boundary")
            && let Err(e) = valid_boundary(boundary)
        {
            check.error("boundary", "Invalid boundary", e);
        }
    }

    async fn connect(&self, _: &Value) -> Result<Arc<dyn Provider>, Vec<Diagnostic>> {
        Ok(Arc::new(*self))
    }
}

/// Go's `multipart.Writer.SetBoundary` rules.
fn valid_boundary(boundary: &str) -> Result<(), String> {
    if boundary.is_empty() || boundary.len() > 70 {
        return Err("mime: invalid boundary length".into());
    }
    let last = boundary.len() - 1;
    for (i, c) in boundary.bytes().enumerate() {
        let ok =
            c.is_ascii_alphanumeric() || b"'()+_,-./:=?".contains(&c) || (c == b' ' && i != last);
        if !ok {
            return Err("mime: invalid boundary character".into());
        }
    }
    Ok(())
}

/// The document and its id (the CRC-32 of what is rendered), from the configuration.
fn render(config: &Value) -> Result<Vec<(&'static str, Value)>, String> {
    let gzip = flag(config, "gzip", true);
    let base64 = flag(config, "base64_encode", true);
    let boundary = text(config, "boundary").unwrap_or_else(|| "MIMEBOUNDARY".into());
    valid_boundary(&boundary)?;
    let parts = match attr(config, "part") {
        Value::List(parts) if !parts.is_empty() => parts,
        _ => return Err("part must have a configuration value: at least one part.".into()),
    };
    // Go's writer: the document's first header line ends in LF, everything after in CRLF;
    // each part's headers sorted by name.
    let mut document = format!(
        "Content-Type: multipart/mixed; boundary=\"{boundary}\"\nMIME-Version: 1.0\r\n\r\n"
    );
    let mut parts_out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let content_type = text(part, "content_type")
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "text/plain".into());
        let mut headers = Vec::new();
        if let Some(filename) = text(part, "filename").filter(|f| !f.is_empty()) {
            headers.push(format!(
                "Content-Disposition: attachment; filename=\"{filename}\""
            ));
        }
        headers.push("Content-Transfer-Encoding: 7bit".to_owned());
        headers.push(format!("Content-Type: {content_type}"));
        headers.push("Mime-Version: 1.0".to_owned());
        if let Some(merge) = text(part, "merge_type").filter(|m| !m.is_empty()) {
            headers.push(format!("X-Merge-Type: {merge}"));
        }
        document.push_str(if i == 0 { "--" } else { "\r\n--" });
        document.push_str(&boundary);
        document.push_str("\r\n");
        for h in headers {
            document.push_str(&h);
            document.push_str("\r\n");
        }
        document.push_str("\r\n");
        document.push_str(&text(part, "content").unwrap_or_default());
        parts_out.push(with(part, [("content_type", Value::String(content_type))]));
    }
    document.push_str(&format!("\r\n--{boundary}--\r\n"));
    let bytes = if gzip {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder
            .write_all(document.as_bytes())
            .and_then(|()| encoder.finish())
            .map_err(|e| e.to_string())?
    } else {
        document.into_bytes()
    };
    let rendered = if base64 {
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    } else {
        String::from_utf8(bytes).map_err(|e| e.to_string())?
    };
    let id = crc32fast::hash(rendered.as_bytes());
    Ok(vec![
        ("gzip", Value::Bool(gzip)),
        ("base64_encode", Value::Bool(base64)),
        ("boundary", Value::String(boundary)),
        ("part", Value::List(parts_out)),
        ("rendered", Value::String(rendered)),
        ("id", Value::String(id.to_string())),
    ])
}

#[async_trait::async_trait]
impl Provider for Cloudinit {
    async fn plan_resource_change(
        &self,
        request: PlanResourceChangeRequest,
    ) -> PlanResourceChangeResponse {
        let schema = schemas()
            .into_type(ResourceMode::Managed, "cloudinit_config")
            .unwrap_or_default();
        plan_made(&schema, &request, |config| {
            if !config.is_wholly_known() {
                return Ok(crate::state_only::unknown_computed(&schema, config));
            }
            Ok(with(config, render(config)?))
        })
    }

    async fn apply_resource_change(
        &self,
        request: ApplyResourceChangeRequest,
    ) -> ApplyResourceChangeResponse {
        crate::state_only::apply_planned(&request)
    }

    async fn read_data_source(&self, request: ReadDataSourceRequest) -> ReadDataSourceResponse {
        match render(&request.config) {
            Ok(values) => ReadDataSourceResponse {
                state: with(&request.config, values),
                diagnostics: vec![],
            },
            Err(e) => ReadDataSourceResponse {
                state: request.config,
                diagnostics: vec![Diagnostic::error(
                    "Unable to render cloudinit config to MIME multi-part file",
                    e,
                )],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(content_type: &str, content: &str) -> Value {
        crate::state_only::object([
            ("content_type", Value::string(content_type)),
            ("content", Value::string(content)),
        ])
    }

    /// The document as Go's multipart writer lays it out: LF after the first header line,
    /// CRLF after everything else, the part's headers sorted, the closing boundary.
    #[test]
    fn one_part_renders_as_the_provider_writes_it() {
        let config = crate::state_only::object([
            ("gzip", Value::Bool(false)),
            ("base64_encode", Value::Bool(false)),
            ("part", Value::List(vec![part("text/x-shellscript", "baz")])),
        ]);
        let values = render(&config).unwrap();
        let rendered = values.iter().find(|(n, _)| *n == "rendered").unwrap();
        assert_eq!(
            rendered.1.as_str().unwrap(),
            "Content-Type: multipart/mixed; boundary=\"MIMEBOUNDARY\"\nMIME-Version: 1.0\r\n\r\n--MIMEBOUNDARY\r\nContent-Transfer-Encoding: 7bit\r\nContent-Type: text/x-shellscript\r\nMime-Version: 1.0\r\n\r\nbaz\r\n--MIMEBOUNDARY--\r\n"
        );
    }

    #[test]
    fn gzip_and_base64_by_default_and_the_id_is_the_crc32() {
        let config = crate::state_only::object([(
            "part",
            Value::List(vec![part("text/cloud-config", "a: 1"), part("", "b")]),
        )]);
        let values = render(&config).unwrap();
        let get = |name: &str| values.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        let rendered = get("rendered");
        let rendered = rendered.as_str().unwrap();
        let gz = base64::engine::general_purpose::STANDARD
            .decode(rendered)
            .unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text)
            .unwrap();
        assert!(text.contains("\r\n--MIMEBOUNDARY\r\nContent-Transfer-Encoding: 7bit\r\nContent-Type: text/plain\r\n"), "{text}");
        assert_eq!(
            get("id").as_str().unwrap(),
            crc32fast::hash(rendered.as_bytes()).to_string()
        );
    }

    #[test]
    fn boundaries_follow_go_rules() {
        assert!(valid_boundary("//").is_ok());
        assert!(valid_boundary("a b").is_ok());
        assert!(valid_boundary("ab ").is_err());
        assert!(valid_boundary("a\"b").is_err());
        assert!(valid_boundary(&"x".repeat(71)).is_err());
    }
}
