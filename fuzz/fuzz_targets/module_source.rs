//! Any string as a module source: parsing must not panic, and whatever it accepts as a git
//! source must be safe to hand to git: nothing git reads as an option or a transport helper,
//! only the documented transports, and a module directory that stays inside the checkout.
#![no_main]

use gpustack_lang::config::remote::GitSource;
use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path};

fuzz_target!(|source: &str| {
    let Ok(Some(git)) = GitSource::parse(source) else {
        return;
    };
    let url = &git.url;
    assert!(!url.starts_with('-'), "{source}: the URL reads as an option");
    assert!(!url.contains("::"), "{source}: a transport helper");
    assert!(
        !url.chars().any(|c| c.is_whitespace() || c.is_control()),
        "{source}: whitespace reaches git"
    );
    assert!(
        ["https://", "ssh://", "file:///"].iter().any(|s| url.starts_with(s))
            || (!url.contains("://") && url.contains(':')),
        "{source}: an undocumented transport"
    );
    if let Some(after) = url.split_once("://").map(|(_, a)| a) {
        let authority = after.split('/').next().unwrap_or_default();
        assert!(
            !authority.starts_with('-') && !authority.rsplit('@').next().unwrap_or_default().starts_with('-'),
            "{source}: the host reads as an option"
        );
    }
    if let Some(reference) = &git.reference {
        assert!(
            !reference.starts_with('-') && !reference.contains(':') && !reference.contains(".."),
            "{source}: the ref reads as an option or a refspec"
        );
    }
    let checkout = Path::new("/stack/.gpustack/modules/0123456789abcdef");
    let module = checkout.join(&git.subdir);
    assert!(
        Path::new(&git.subdir)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir)),
        "{source}: the module directory leaves the checkout"
    );
    assert!(module.starts_with(checkout), "{source}");
});
