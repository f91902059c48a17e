use gpustack_protocol::Value;
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct CallError { pub arg: Option<usize>, pub message: String }
pub fn names() -> &'static [&'static str] { &[] }
pub fn call(_name: &str, _args: &[Value]) -> Option<Result<Value, CallError>> { None }
