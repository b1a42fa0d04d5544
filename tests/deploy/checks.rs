//! Checks shared by several tests: monitor endpoints, security context, mounts, bindings,
//! and small readers of rendered objects. No rendering here.

use super::*;

// ---------------------------------------------------------------------------------------------
// Checks shared by several tests

/// apiVersion and kind of a Prometheus Operator object, and its namespace.
pub(crate) fn check_operator_object(f: &mut Failures, d: &Doc, kind: &str) {
    if d.value["apiVersion"] != "monitoring.coreos.com/v1" || d.kind() != kind {
        f.add(format!(
            "{kind}: apiVersion {} kind {}",
            d.value["apiVersion"],
            d.kind()
        ));
    }
    if d.value["metadata"]["namespace"] != NAMESPACE {
        f.add(format!("{kind}: not in the release namespace"));
    }
}

/// One scrape endpoint of a ServiceMonitor / PodMonitor.
pub(crate) fn check_endpoint(f: &mut Failures, what: &str, ep: Option<&Value>, secured: bool) {
    let Some(ep) = ep else {
        f.add(format!("{what}: no endpoint"));
        return;
    };
    for (k, want) in [
        ("port", json!("metrics")),
        ("path", json!("/metrics")),
        ("interval", json!("15s")),
        ("scrapeTimeout", json!("10s")),
        ("honorLabels", json!(true)),
    ] {
        if ep[k] != want {
            f.add(format!("{what}: endpoint {k} is {}, want {want}", ep[k]));
        }
    }
    if secured {
        if ep["scheme"] != "https"
            || ep.pointer("/tlsConfig/ca/secret/key") != Some(&json!("ca.crt"))
        {
            f.add(format!(
                "{what}: TLS on, but the endpoint does not scrape HTTPS with the CA: {ep}"
            ));
        }
        if ep.pointer("/basicAuth/username/key") != Some(&json!("username")) {
            f.add(format!(
                "{what}: basic auth on, but the endpoint has no credentials: {ep}"
            ));
        }
    } else if ep.get("scheme").is_some() || ep.get("basicAuth").is_some() {
        f.add(format!(
            "{what}: HTTPS or credentials although TLS and basic auth are off: {ep}"
        ));
    }
}

/// What every rendering of the DaemonSet must keep: no privilege, no capability, a read-only
/// root, RuntimeDefault seccomp, no host network.
pub(crate) fn check_common_security(f: &mut Failures, what: &str, ds: &Value) {
    let pod = &ds["spec"]["template"]["spec"];
    if pod["hostNetwork"] == true {
        f.add(format!("{what}: hostNetwork"));
    }
    for c in array(&pod["containers"]) {
        let sc = &c["securityContext"];
        if sc["privileged"] == true {
            f.add(format!("{what}: privileged container"));
        }
        if sc["allowPrivilegeEscalation"] != false {
            f.add(format!("{what}: allowPrivilegeEscalation is not false"));
        }
        if sc.pointer("/capabilities/drop") != Some(&json!(["ALL"]))
            || sc.pointer("/capabilities/add").is_some()
        {
            f.add(format!(
                "{what}: capabilities must drop ALL and add none: {sc}"
            ));
        }
        if sc["readOnlyRootFilesystem"] != true {
            f.add(format!("{what}: readOnlyRootFilesystem is not true"));
        }
        let seccomp = sc
            .pointer("/seccompProfile/type")
            .or_else(|| pod.pointer("/securityContext/seccompProfile/type"));
        if seccomp != Some(&json!("RuntimeDefault")) {
            f.add(format!("{what}: seccompProfile is not RuntimeDefault"));
        }
    }
}

/// The counters ConfigMap `name` mounted as a whole directory, the directory of COUNTERS_FILE.
pub(crate) fn check_counters_mount(f: &mut Failures, ds: &Value, name: &str) {
    let pod = &ds["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let vol = array(&pod["volumes"])
        .iter()
        .find(|v| v.pointer("/configMap/name") == Some(&json!(name)));
    let Some(vol) = vol else {
        f.add(format!("no volume of ConfigMap {name}"));
        return;
    };
    if vol.pointer("/configMap/items").is_some() {
        f.add(format!("the counters volume lists items: {vol}"));
    }
    let mounts: Vec<&Value> = array(&c["volumeMounts"])
        .iter()
        .filter(|m| m["name"] == vol["name"])
        .collect();
    let dir = COUNTERS_FILE.rsplit_once('/').unwrap().0;
    if mounts.len() != 1
        || mounts[0]["mountPath"] != dir
        || mounts[0].get("subPath").is_some()
        || mounts[0]["readOnly"] != true
    {
        f.add(format!(
            "ConfigMap {name} must be mounted once, read-only, as the directory {dir} \
             (no subPath, which never sees updates): {mounts:?}"
        ));
    }
}

/// The ClusterRoleBinding ties the ClusterRole to the pod's service account.
pub(crate) fn check_binding(f: &mut Failures, r: &Rendered) {
    let b = &r.one("ClusterRoleBinding").value;
    let sa = r.one("DaemonSet").value["spec"]["template"]["spec"]["serviceAccountName"].clone();
    if b["roleRef"]["name"] != r.one("ClusterRole").name()
        || b.pointer("/subjects/0/name") != Some(&sa)
        || b.pointer("/subjects/0/namespace") != Some(&json!(NAMESPACE))
    {
        f.add(format!(
            "ClusterRoleBinding does not bind the role to {sa}: {b}"
        ));
    }
}

pub(crate) fn counters_csv(r: &Rendered) -> Option<String> {
    r.all("ConfigMap")
        .into_iter()
        .find_map(|d| d.value["data"][COUNTERS_KEY].as_str().map(str::to_owned))
}

/// The mount path of the volume that holds Secret `name`.
pub(crate) fn mount_of_secret(pod: &Value, name: &str) -> Option<String> {
    let vol = array(&pod["volumes"])
        .iter()
        .find(|v| v.pointer("/secret/secretName") == Some(&json!(name)))?;
    array(&pod["containers"][0]["volumeMounts"])
        .iter()
        .find(|m| m["name"] == vol["name"] && m["readOnly"] == true)
        .and_then(|m| m["mountPath"].as_str().map(str::to_owned))
}

pub(crate) fn args_of(c: &Value) -> Vec<String> {
    array(&c["args"])
        .iter()
        .map(|a| {
            a.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| a.to_string())
        })
        .collect()
}

pub(crate) fn env_of(c: &Value) -> Vec<Value> {
    array(&c["env"]).to_vec()
}

pub(crate) fn has_pair(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

/// Every key/value of `sub` is in `sup` (both JSON objects).
pub(crate) fn is_subset(sub: &Value, sup: &Value) -> bool {
    match (sub.as_object(), sup.as_object()) {
        (Some(a), Some(b)) => !a.is_empty() && a.iter().all(|(k, v)| b.get(k) == Some(v)),
        _ => false,
    }
}

pub(crate) fn collect_strings(v: &Value, key: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key
                    && let Some(s) = x.as_str()
                {
                    out.push(s.to_owned());
                }
                collect_strings(x, key, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, key, out)),
        _ => {}
    }
}

pub(crate) fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// `$2a$`/`$2b$`/`$2y$`, a two-digit cost, 22 characters of salt and 31 of hash.
pub(crate) fn is_bcrypt(h: &str) -> bool {
    let b = h.as_bytes();
    h.len() == 60
        && (h.starts_with("$2a$") || h.starts_with("$2b$") || h.starts_with("$2y$"))
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
        && b[6] == b'$'
        && b[7..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'/')
}

/// The DER bytes of the first PEM block in `pem`.
pub(crate) fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let b64: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64_decode(&b64)
}

/// The serverName the ServiceMonitor's endpoint verifies.
pub(crate) fn ep_server_name(r: &Rendered) -> Option<String> {
    r.one("ServiceMonitor")
        .value
        .pointer("/spec/endpoints/0/tlsConfig/serverName")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Standard base64 (with padding), as Kubernetes Secret data.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .ok()
}

// ---------------------------------------------------------------------------------------------
