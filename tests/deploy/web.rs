//! HTTPS and basic auth: the rendered web-config.yml, the generated certificate and the
//! hashes, accepted by the exporter's own web-config loader.

use super::*;

#[test]
pub(crate) fn tls_and_basic_auth_render_a_web_config() {
    let Some(helm) = helm_or_skip("tls_and_basic_auth_render_a_web_config") else {
        return;
    };
    let mut f = Failures::default();
    let users = [
        ("prometheus", "scrape-secret"),
        ("admin", "correct horse battery staple"),
    ];
    let r = template(
        &helm,
        &[],
        &[json!({
            "tlsServerConfig": {"enabled": true},
            "basicAuth": {"users": {users[0].0: users[0].1, users[1].0: users[1].1}},
        })],
    )
    .unwrap();
    let ds = &r.one("DaemonSet").value;
    let pod = &ds["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    for (probe, path) in [("livenessProbe", "/health"), ("readinessProbe", "/ready")] {
        let p = &c[probe];
        if p.pointer("/httpGet/scheme") != Some(&json!("HTTPS"))
            || p.pointer("/httpGet/path") != Some(&json!(path))
        {
            f.add(format!(
                "TLS: {probe} should be an HTTPS GET of {path}: {p}"
            ));
        }
    }
    if ds
        .pointer("/spec/template/metadata/annotations/checksum~1web-config")
        .is_none()
    {
        f.add("TLS: no checksum/web-config annotation to roll the pods when it changes");
    }

    // The generated certificate Secret, mounted where the web config says.
    let tls_dir = tempfile::tempdir().unwrap();
    let tls = r
        .all("Secret")
        .into_iter()
        .find(|s| s.value["type"] == "kubernetes.io/tls");
    match tls {
        None => f.add("TLS without existingSecret: no kubernetes.io/tls Secret generated"),
        Some(s) => {
            for (key, pem) in [
                ("tls.crt", "-----BEGIN CERTIFICATE-----"),
                ("ca.crt", "-----BEGIN CERTIFICATE-----"),
                ("tls.key", "-----BEGIN RSA PRIVATE KEY-----"),
            ] {
                let text = s.value["data"][key]
                    .as_str()
                    .and_then(base64_decode)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                if !text.starts_with(pem) {
                    f.add(format!("TLS Secret {key} is not a base64 PEM ({pem})"));
                }
                // As the volume would hold it, for the exporter's own loader below.
                std::fs::write(tls_dir.path().join(key), &text).unwrap();
            }
            if mount_of_secret(pod, s.name()).as_deref() != Some(TLS_DIR) {
                f.add(format!("TLS Secret not mounted at {TLS_DIR}"));
            }
            // The server certificate names the Service, which the monitors verify.
            let cert = std::fs::read_to_string(tls_dir.path().join("tls.crt")).unwrap();
            let sans = pem_body(&cert)
                .and_then(|der| gpu_exporter::serve::web_config::subject_alt_names(&der))
                .unwrap_or_default();
            let svc = format!("{RELEASE}.{NAMESPACE}.svc");
            if !sans.contains(&svc) || ep_server_name(&r) != Some(svc.clone()) {
                f.add(format!(
                    "the certificate's names {sans:?} and the ServiceMonitor's serverName {:?} \
                     should both be {svc}",
                    ep_server_name(&r)
                ));
            }
        }
    }

    // The web config: path from the flag, Secret mounted there, exporter-toolkit keys.
    let args = args_of(c);
    let flag_path = args
        .iter()
        .position(|a| a == "--web-config-file")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_default();
    let (dir, file) = flag_path.rsplit_once('/').unwrap_or(("", ""));
    let web_secret = r
        .all("Secret")
        .into_iter()
        .find(|s| s.value.pointer(&format!("/stringData/{file}")).is_some());
    let Some(web_secret) = web_secret else {
        f.add(format!(
            "--web-config-file {flag_path:?}: no Secret with the key {file:?}"
        ));
        f.finish("TLS and basic auth");
        return;
    };
    if mount_of_secret(pod, web_secret.name()).as_deref() != Some(dir) {
        f.add(format!("web config Secret not mounted at {dir}"));
    }
    let web: Value =
        serde_saphyr::from_str(web_secret.value["stringData"][file].as_str().unwrap()).unwrap();
    // The exporter itself loads this web config with the generated certificate (the TLS
    // volume's path swapped for a directory holding the Secret's files).
    let text = web_secret.value["stringData"][file]
        .as_str()
        .unwrap()
        .replace(TLS_DIR, &tls_dir.path().to_string_lossy());
    match gpu_exporter::serve::web_config::WebConfig::parse(&tls_dir.path().join(file), &text) {
        Ok(w) => {
            if w.tls.is_none() || w.basic_auth.as_ref().map(|b| b.user_count()) != Some(users.len())
            {
                f.add(format!("the exporter loaded the web config as {w:?}"));
            }
        }
        Err(e) => f.add(format!(
            "the exporter rejects the rendered web config: {e:?}"
        )),
    }
    let want_tls = json!({
        "cert_file": "/etc/gpu-exporter/tls/tls.crt",
        "key_file": "/etc/gpu-exporter/tls/tls.key",
        "min_version": "TLS12",
    });
    if web["tls_server_config"] != want_tls {
        f.add(format!("tls_server_config {}", web["tls_server_config"]));
    }
    let hashes = web["basic_auth_users"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if hashes.len() != users.len() {
        f.add(format!("basic_auth_users {hashes:?}"));
    }
    for (user, password) in users {
        let Some(hash) = hashes.get(user).and_then(Value::as_str) else {
            f.add(format!("basic_auth_users lacks {user}"));
            continue;
        };
        if !is_bcrypt(hash) {
            f.add(format!("{user}: {hash:?} is not a bcrypt hash"));
            continue;
        }
        match bcrypt::verify(password, hash) {
            Ok(true) => {}
            other => f.add(format!(
                "{user}: the hash does not verify the given password ({other:?})"
            )),
        }
        if bcrypt::verify("not-the-password", hash).unwrap_or(true) {
            f.add(format!("{user}: the hash verifies a wrong password"));
        }
    }
    if web_secret.text.contains(users[1].1) {
        f.add("a plaintext password is in the web config Secret");
    }
    // The ServiceMonitor scrapes over HTTPS with the first user's credentials.
    let sm = r.one("ServiceMonitor");
    let ep = &sm.value["spec"]["endpoints"][0];
    if ep["scheme"] != "https" {
        f.add(format!("TLS: ServiceMonitor scheme {}", ep["scheme"]));
    }
    let auth_name = ep
        .pointer("/basicAuth/password/name")
        .and_then(Value::as_str);
    let auth = r
        .all("Secret")
        .into_iter()
        .find(|s| Some(s.name()) == auth_name);
    match auth {
        Some(s)
            if s.value["stringData"]["username"] == "admin"
                && s.value["stringData"]["password"] == "correct horse battery staple" => {}
        other => f.add(format!(
            "ServiceMonitor basicAuth should name a Secret with the first user's credentials: {:?}",
            other.map(|s| &s.value["stringData"])
        )),
    }

    // Client certificates required: TCP probes, client CA from its own Secret.
    let r = template(
        &helm,
        &[],
        &[json!({"tlsServerConfig": {
            "enabled": true, "existingSecret": "exporter-tls",
            "clientAuthType": "RequireAndVerifyClientCert", "clientCASecret": "client-ca",
            "minVersion": "TLS13",
        }})],
    )
    .unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    for probe in ["livenessProbe", "readinessProbe"] {
        if c[probe].pointer("/tcpSocket/port") != Some(&json!("metrics"))
            || c[probe].get("httpGet").is_some()
        {
            f.add(format!(
                "client certificates required: {probe} should be a tcpSocket check: {}",
                c[probe]
            ));
        }
    }
    if r.all("Secret")
        .iter()
        .any(|s| s.value["type"] == "kubernetes.io/tls")
    {
        f.add("existingSecret given, but a certificate was generated anyway");
    }
    if mount_of_secret(pod, "exporter-tls").as_deref() != Some("/etc/gpu-exporter/tls")
        || mount_of_secret(pod, "client-ca").as_deref() != Some("/etc/gpu-exporter/client-ca")
    {
        f.add("existingSecret / clientCASecret not mounted");
    }
    let web_text = r
        .all("Secret")
        .into_iter()
        .find_map(|s| s.value.pointer("/stringData/web-config.yml").cloned())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let web: Value = serde_saphyr::from_str(&web_text).unwrap_or_default();
    let want_tls = json!({
        "cert_file": "/etc/gpu-exporter/tls/tls.crt",
        "key_file": "/etc/gpu-exporter/tls/tls.key",
        "client_auth_type": "RequireAndVerifyClientCert",
        "client_ca_file": "/etc/gpu-exporter/client-ca/ca.crt",
        "min_version": "TLS13",
    });
    if web["tls_server_config"] != want_tls || web.get("basic_auth_users").is_some() {
        f.add(format!("client certificates: web config {web}"));
    }

    // A client auth type that does not demand a certificate keeps the HTTPS probes.
    let r = template(
        &helm,
        &[],
        &[json!({"tlsServerConfig": {"enabled": true, "clientAuthType": "RequestClientCert"}})],
    )
    .unwrap();
    let c = &r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0];
    if c.pointer("/readinessProbe/httpGet/scheme") != Some(&json!("HTTPS")) {
        f.add("RequestClientCert: probes should stay HTTPS GETs");
    }
    f.finish("TLS and basic auth");
}
