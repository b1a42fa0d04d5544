//! `gpu-exporter check` as the image's non-root user against the kubelet's socket as the
//! kubelet leaves it (root's, mode 0755): the check names the socket's owner and mode, the
//! user it runs as, and the fix (uid 0), and exits 1.

use super::*;

#[test]
pub(crate) fn check_as_non_root_names_the_socket_permission_and_uid_0() {
    if !can_change_user("check_as_non_root_names_the_socket_permission_and_uid_0") {
        return;
    }
    let sb = Sandbox::new();
    let dir = sb.subdir("pod-resources", 0o755);
    let sock = dir.join("kubelet.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    fs::set_permissions(&sock, fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args(nonroot_args())
        .arg("--")
        .arg(&sb.bin)
        .args(["check", "-a", &format!("127.0.0.1:{}", common::free_port())])
        .arg("--nvml-lib")
        .arg(&sb.lib)
        .args([
            "-k",
            "--kubernetes-pod-metadata=false",
            "--kubernetes-process-metrics=false",
        ])
        .arg("--pod-resources-kubelet-socket")
        .arg(&sock)
        .current_dir(sb.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.contains("FAIL  pod-resources socket"))
        .unwrap_or_else(|| panic!("no failed socket line:\n{text}"));
    assert!(
        line.contains("owner uid 0, mode 0755") && line.contains(&format!("runs as uid {NONROOT}")),
        "{line}"
    );
    assert!(text.contains("fix: run the container as uid 0"), "{text}");
}
