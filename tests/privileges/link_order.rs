//! `scripts/link-order.sh resolve`, which the Dockerfile's build step runs to lay out the
//! production binary's code: on this test binary's own symbols, it finds the profiled
//! functions although their crate disambiguators differ from the profile's (as between the
//! build that wrote the profile and the image's build), writes them in the profile's order,
//! and refuses a profile that no longer matches, a legacy-mangled binary and a missing one.
//! Whether the image's binary is laid out that way is tests/image/check.sh's part.

use super::*;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/link-order.sh");

/// Runs `resolve` on `bin` with `profile`; returns (success, written order, stderr).
fn resolve(bin: &Path, profile: &str) -> (bool, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let prof = dir.path().join("profile.txt");
    fs::write(&prof, profile).unwrap();
    let out = dir.path().join("order");
    let run = Command::new("bash")
        .arg(SCRIPT)
        .args(["resolve".as_ref(), bin.as_os_str(), out.as_os_str()])
        .env("LINK_ORDER_PROFILE", &prof)
        .output()
        .unwrap();
    let order = fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    (run.status.success(), order, stderr)
}

/// Function symbols of the exporter's own crate in the test binary, v0-mangled (the
/// repository's .cargo/config.toml asks for v0 names).
fn own_functions() -> Vec<String> {
    let nm = Command::new("nm")
        .args(["--defined-only", BIN])
        .output()
        .expect("nm (binutils)");
    let text = String::from_utf8_lossy(&nm.stdout);
    let mut syms: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "t" | "T") && f[2].starts_with("_RNv"))
                .then(|| f[2].to_owned())
        })
        .filter(|s| s.contains("12gpu_exporter") && !s.contains(".llvm."))
        .collect();
    syms.sort();
    syms.dedup();
    syms
}

/// The same symbol as another build would name it: every crate disambiguator replaced.
fn as_another_build(sym: &str) -> String {
    let mut out = String::new();
    let mut rest = sym;
    while let Some(i) = rest.find("Cs") {
        out.push_str(&rest[..i + 2]);
        rest = &rest[i + 2..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        if rest[end..].starts_with('_') && end > 0 {
            out.push_str("zz9");
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn link_order_resolves_a_profile_from_another_build_in_its_order() {
    let syms = own_functions();
    assert!(
        syms.len() > 100,
        "{BIN}: only {} v0-mangled gpu_exporter functions: is .cargo/config.toml's symbol-mangling-version=v0 applied?",
        syms.len()
    );
    // Three functions, profiled in an order that is not the binary's, under other
    // disambiguators (that the rename took is checked, so the test cannot pass on equal names).
    let picked = [&syms[syms.len() / 2], &syms[0], &syms[syms.len() - 1]];
    let profile: Vec<String> = picked.iter().map(|s| as_another_build(s)).collect();
    for (p, s) in profile.iter().zip(picked) {
        assert_ne!(p, s, "the disambiguator of {s} was not replaced");
    }
    let text = format!("# a profile\n{}\n", profile.join("\n"));
    let (ok, order, stderr) = resolve(Path::new(BIN), &text);
    assert!(ok, "resolve failed: {stderr}");
    assert!(
        stderr.contains("3 of 3 profiled functions found"),
        "{stderr}"
    );
    let pos: Vec<usize> = picked
        .iter()
        .map(|s| {
            order
                .iter()
                .position(|o| o == *s)
                .unwrap_or_else(|| panic!("{s} missing from the order {order:?}"))
        })
        .collect();
    assert!(
        pos.windows(2).all(|w| w[0] < w[1]),
        "not in the profile's order: {pos:?} in {order:?}"
    );
    // Nothing outside the profile: at most the instances that share a profiled name.
    assert!(
        order.len() < 20,
        "{} symbols for 3 profiled: {order:?}",
        order.len()
    );
}

#[test]
fn link_order_refuses_a_stale_profile_a_legacy_binary_and_a_missing_one() {
    let syms = own_functions();
    // One of eleven profiled functions still in the sources: 9 %, under the 80 % floor.
    let mut text = format!("{}\n", syms[0]);
    for i in 0..10 {
        text.push_str(&format!("_RNvCs1_12gpu_exporter18renamed_function_{i}\n"));
    }
    let (ok, _, stderr) = resolve(Path::new(BIN), &text);
    assert!(!ok, "a profile of mostly gone functions was accepted");
    assert!(
        stderr.contains("1 of 11 profiled functions") && stderr.contains("is out of date"),
        "{stderr}"
    );
    assert!(
        stderr.contains("profile.txt"),
        "the profile is not named: {stderr}"
    );

    // A legacy-mangled build: every instance of a generic function would look alike.
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("legacy.c");
    fs::write(
        &c,
        "void _ZN12gpu_exporter4tick17h0123456789abcdefE(void) {}\n",
    )
    .unwrap();
    let obj = dir.path().join("legacy.o");
    let cc = Command::new("cc")
        .args(["-c".as_ref(), c.as_os_str(), "-o".as_ref(), obj.as_os_str()])
        .status()
        .expect("cc");
    assert!(cc.success());
    let (ok, _, stderr) = resolve(&obj, &text);
    assert!(!ok, "a legacy-mangled binary was accepted");
    assert!(
        stderr.contains("legacy-mangled") && stderr.contains("symbol-mangling-version=v0"),
        "{stderr}"
    );

    let missing = dir.path().join("no-such-binary");
    let (ok, _, stderr) = resolve(&missing, &text);
    assert!(!ok);
    assert!(stderr.contains("no-such-binary: no such file"), "{stderr}");
}
