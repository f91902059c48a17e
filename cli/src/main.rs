//! The `gpustack` command line.

fn main() -> std::process::ExitCode {
    quiet_on_closed_pipe();
    gpustack::main()
}

/// `gpustack plan --json | head` closes stdout early; like other Unix tools, gpustack then ends
/// quietly (status 141, as for SIGPIPE) instead of reporting a panic from `println!`.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
