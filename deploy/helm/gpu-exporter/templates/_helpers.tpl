{{- /*
Named templates of the gpu-exporter chart: names and labels, the derived switches (does anything
need the Kubernetes API? is a web config needed?), the paths inside the container, and the
checks that fail rendering on contradictory values.
*/ -}}

{{/* Chart name, or nameOverride. */}}
{{- define "gpu-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name prefix: fullnameOverride, else the release name when it holds the chart
name, else release-chart. */}}
{{- define "gpu-exporter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpu-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "gpu-exporter.labels" -}}
helm.sh/chart: {{ include "gpu-exporter.chart" . }}
{{ include "gpu-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: gpu-metrics
app.kubernetes.io/part-of: gpu-exporter
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the exporter's pods (Service, DaemonSet, monitors). */}}
{{- define "gpu-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpu-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gpu-exporter.image" -}}
{{- printf "%s:%s%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) (ternary "-dcgm" "" (and .Values.dcgm .Values.dcgm.variantImage | default false)) }}
{{- end }}

{{/* "true" unless exporter.enabled is false (or "false", from --set-string): the DaemonSet and
everything only it needs are rendered. A missing key counts as true, as after an upgrade with
--reuse-values from a chart version without it. */}}
{{- define "gpu-exporter.exporterEnabled" -}}
{{- $e := .Values.exporter | default dict }}
{{- if or (not (hasKey $e "enabled")) (ne (toString $e.enabled) "false") }}true{{ end }}
{{- end }}

{{/* "true" when the exporter uses the Kubernetes API (the pod watch, ResourceSlices with
DRA or gpuOperator.mode=gpuCluster, the health writes). The API features work only with -k
(kubernetes.podMapping). */}}
{{- define "gpu-exporter.apiEnabled" -}}
{{- $k := .Values.kubernetes }}
{{- $h := .Values.health | default dict }}
{{- if and $k.podMapping (or $k.podMetadata $k.enablePodLabels $k.enablePodUID .Values.kubernetesDRA.enabled (include "gpu-exporter.gpuCluster" .) $h.nodeConditions $h.events) }}true{{ end }}
{{- end }}

{{/* gpuOperator.mode, "" when the value (or the whole block, as after an upgrade with
--reuse-values from a chart version without it) is missing. */}}
{{- define "gpu-exporter.operatorMode" -}}
{{- $o := .Values.gpuOperator | default dict }}
{{- toString ($o.mode | default "") }}
{{- end }}

{{/* "true" with gpuOperator.mode=gpuCluster: the GPU Operator's DRA deployment (GPUCluster),
whose exporter reads ResourceSlices and no pods. */}}
{{- define "gpu-exporter.gpuCluster" -}}
{{- if eq (include "gpu-exporter.operatorMode" .) "gpuCluster" }}true{{ end }}
{{- end }}

{{/* "true" when the pods claim the node's GPUs through an admin-access ResourceClaimTemplate,
as the GPUCluster's own exporter does: gpuOperator.mode=gpuCluster with
gpuOperator.adminAccessClaim (on when the key is missing, as after an upgrade with
--reuse-values). */}}
{{- define "gpu-exporter.adminAccessClaim" -}}
{{- $o := .Values.gpuOperator | default dict }}
{{- if and (include "gpu-exporter.gpuCluster" .) (or (not (hasKey $o "adminAccessClaim")) $o.adminAccessClaim) }}true{{ end }}
{{- end }}

{{/* The admin-access ResourceClaimTemplate's name. */}}
{{- define "gpu-exporter.adminClaimTemplateName" -}}
{{- printf "%s-admin" (include "gpu-exporter.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "true" when the pod watch is on (--kubernetes-pod-metadata and the pods rule): with
kubernetes.podMetadata, except under gpuOperator.mode=gpuCluster, whose exporter reads no pods
unless pod labels or pod UIDs are asked for. */}}
{{- define "gpu-exporter.podWatch" -}}
{{- $k := .Values.kubernetes }}
{{- if include "gpu-exporter.gpuCluster" . }}
{{- if or $k.enablePodLabels $k.enablePodUID }}true{{ end }}
{{- else if $k.podMetadata }}true{{ end }}
{{- end }}

{{/* The node label that the GPU Operator's exporter DaemonSet of gpuOperator.mode selects
nodes by ("" without a mode): the operator sets it to "true" on its GPU nodes, and its driver
manager changes it to pause the exporter while it reloads the driver. */}}
{{- define "gpu-exporter.operatorDeployLabel" -}}
{{- $m := include "gpu-exporter.operatorMode" . }}
{{- if eq $m "clusterPolicy" }}nvidia.com/gpu.deploy.dcgm-exporter
{{- else if eq $m "gpuCluster" }}nvidia.com/gpu.deploy.dcgm-exporter-dra
{{- end }}
{{- end }}

{{/* Where values.arguments and values.extraEnv name the counters file, as a JSON list of
descriptions (empty: they do not, and the chart's -f names its ConfigMap's file). Every
spelling the exporter accepts counts: `-f FILE`, `-fFILE`, `-f=FILE`, `--collectors FILE`,
`--collectors=FILE`, Go's one-dash `-collectors[=]FILE`, `-f` at the end of a cluster of
one-letter switches (`-kf FILE`), up to a `--`; and DCGM_EXPORTER_COLLECTORS in extraEnv with
a value that is not blank (a blank one counts as not set, as in dcgm-exporter) or a valueFrom.
`-fake-gpus` is a flag of its own. */}}
{{- define "gpu-exporter.userCounters" -}}
{{- $found := list }}
{{- $args := .Values.arguments | default list }}
{{- if kindIs "slice" $args }}
{{- $n := len $args }}
{{- $stop := false }}
{{- range $i, $a := $args }}
{{- $s := toString $a }}
{{- if $stop }}
{{- else if eq $s "--" }}
{{- $stop = true }}
{{- else if or (has $s (list "-f" "--collectors" "-collectors")) (regexMatch "^-[kno]+f$" $s) }}
{{- $value := "" }}
{{- if lt (add1 $i) $n }}{{ $value = printf " %s" (toString (index $args (add1 $i))) }}{{ end }}
{{- $found = append $found (printf "arguments[%d] %q%s" $i $s $value) }}
{{- else if or (regexMatch "^--?collectors=" $s) (and (regexMatch "^-[kno]*f." $s) (not (regexMatch "^-fake-gpus(=|$)" $s))) }}
{{- $found = append $found (printf "arguments[%d] %q" $i $s) }}
{{- end }}
{{- end }}
{{- end }}
{{- range .Values.extraEnv }}
{{- if and (kindIs "map" .) (eq (toString .name) "DCGM_EXPORTER_COLLECTORS") }}
{{- if .valueFrom }}
{{- $found = append $found "extraEnv DCGM_EXPORTER_COLLECTORS (valueFrom)" }}
{{- else if trim (toString (.value | default "")) }}
{{- $found = append $found (printf "extraEnv DCGM_EXPORTER_COLLECTORS=%s" (toString .value)) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $found }}
{{- end }}

{{/* The names of the variables that values.extraEnv sets, as a JSON list: the chart leaves
out its own entry of the same name (NODE_NAME, NVIDIA_*, KUBERNETES_ENABLE_DRA), so a copy of
the GPU Operator's env keeps its values and the container has no duplicate variable. */}}
{{- define "gpu-exporter.extraEnvNames" -}}
{{- $names := list }}
{{- range .Values.extraEnv }}
{{- if kindIs "map" . }}{{ $names = append $names (toString .name) }}{{ end }}
{{- end }}
{{- toJson $names }}
{{- end }}

{{/* "true" when the API token is mounted into the pod. */}}
{{- define "gpu-exporter.automountToken" -}}
{{- $a := .Values.serviceAccount.automountToken | toString }}
{{- if eq $a "auto" }}{{ include "gpu-exporter.apiEnabled" . }}{{ else if eq $a "true" }}true{{ end }}
{{- end }}

{{/* "true" when the pod shares the host's PID namespace (per-process attribution). */}}
{{- define "gpu-exporter.hostPID" -}}
{{- if and .Values.kubernetes.podMapping .Values.kubernetes.processMetrics }}true{{ end }}
{{- end }}

{{/* "true" when the exporter gets a web config (TLS and/or basic auth). */}}
{{- define "gpu-exporter.webConfigEnabled" -}}
{{- if or .Values.tlsServerConfig.enabled (gt (len .Values.basicAuth.users) 0) }}true{{ end }}
{{- end }}

{{/* "true" when the server demands a client certificate, which the kubelet's probes cannot
present. */}}
{{- define "gpu-exporter.clientCertRequired" -}}
{{- if and .Values.tlsServerConfig.enabled (has .Values.tlsServerConfig.clientAuthType (list "RequireAnyClientCert" "RequireAndVerifyClientCert")) }}true{{ end }}
{{- end }}

{{/* "true" when the client auth type verifies client certificates against a CA. */}}
{{- define "gpu-exporter.clientCANeeded" -}}
{{- if and .Values.tlsServerConfig.enabled (has .Values.tlsServerConfig.clientAuthType (list "VerifyClientCertIfGiven" "RequireAndVerifyClientCert")) }}true{{ end }}
{{- end }}

{{- define "gpu-exporter.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "gpu-exporter.fullname" .)) .Values.tlsServerConfig.existingSecret }}
{{- end }}

{{- define "gpu-exporter.webConfigSecretName" -}}
{{- printf "%s-web-config" (include "gpu-exporter.fullname" .) }}
{{- end }}

{{- define "gpu-exporter.scrapeAuthSecretName" -}}
{{- printf "%s-scrape-auth" (include "gpu-exporter.fullname" .) }}
{{- end }}

{{- define "gpu-exporter.countersConfigMapName" -}}
{{- default (printf "%s-counters" (include "gpu-exporter.fullname" .)) .Values.counters.existingConfigMap }}
{{- end }}

{{/* Paths inside the container. */}}
{{- /* The chart's counters ConfigMap, beside the image's own files in /etc/dcgm-exporter
(default-counters.csv, dcp-metrics-included.csv, ...), which stay visible for the -f or
DCGM_EXPORTER_COLLECTORS of a GPU Operator configuration. */ -}}
{{- define "gpu-exporter.countersDir" -}}/etc/gpu-exporter/counters{{- end }}
{{- define "gpu-exporter.webConfigDir" -}}/etc/gpu-exporter/web{{- end }}
{{- define "gpu-exporter.tlsDir" -}}/etc/gpu-exporter/tls{{- end }}
{{- define "gpu-exporter.clientCADir" -}}/etc/gpu-exporter/client-ca{{- end }}

{{/* The Service's DNS name, which the generated certificate carries and the monitors verify. */}}
{{- define "gpu-exporter.serviceDNSName" -}}
{{- printf "%s.%s.svc" (include "gpu-exporter.fullname" .) .Release.Namespace }}
{{- end }}

{{/* The counters CSV the chart puts into its ConfigMap. */}}
{{- define "gpu-exporter.countersCSV" -}}
{{- if .Values.counters.custom }}
{{- .Values.counters.custom }}
{{- else }}
{{- $file := printf "files/counters/%s.csv" (ternary "default-counters" .Values.counters.preset (eq .Values.counters.preset "default")) }}
{{- $text := .Files.Get $file }}
{{- if not $text }}
{{- fail (printf "counters.preset %q: the chart has no %s (run deploy/sync.sh)" .Values.counters.preset $file) }}
{{- end }}
{{- $text }}
{{- end }}
{{- end }}

{{/*
Contradictions in the values: fail rendering with a message that names the values to change.
Included by every template, so `helm template --show-only` fails too. With exporter.enabled
false only the rules and dashboards are rendered, and only the check that something is left
applies.
*/}}
{{- define "gpu-exporter.validate" -}}
{{- $v := .Values }}
{{- range $i, $p := $v.cost.prices }}
{{- if not (kindIs "map" $p) }}
{{- fail (printf "cost.prices[%d] is not a map: give modelName and dollarsPerHour (and optionally nodePool)." $i) }}
{{- end }}
{{- if not $p.modelName }}
{{- fail (printf "cost.prices[%d] has no modelName: give the GPU model exactly as the exporters label it (e.g. \"NVIDIA H100 80GB HBM3\")." $i) }}
{{- end }}
{{- if not (or (kindIs "float64" $p.dollarsPerHour) (kindIs "int64" $p.dollarsPerHour) (kindIs "int" $p.dollarsPerHour)) }}
{{- fail (printf "cost.prices[%d] (%s): dollarsPerHour %v is not a number." $i $p.modelName $p.dollarsPerHour) }}
{{- end }}
{{- if lt (float64 $p.dollarsPerHour) 0.0 }}
{{- fail (printf "cost.prices[%d] (%s): dollarsPerHour %v is negative." $i $p.modelName $p.dollarsPerHour) }}
{{- end }}
{{- range $k, $_ := $p }}
{{- if not (has $k (list "modelName" "dollarsPerHour" "nodePool")) }}
{{- fail (printf "cost.prices[%d] (%s): unknown key %q; the keys are modelName, dollarsPerHour and nodePool." $i $p.modelName $k) }}
{{- end }}
{{- end }}
{{- if and $p.nodePool (not $v.cost.nodePoolLabel) }}
{{- fail (printf "cost.prices[%d] (%s) has nodePool %q but cost.nodePoolLabel is empty: name the node label that holds the pool (e.g. node.kubernetes.io/instance-type)." $i $p.modelName $p.nodePool) }}
{{- end }}
{{- end }}
{{- $k := $v.kubernetes }}
{{- if not (include "gpu-exporter.exporterEnabled" .) }}
{{- /* Rules and dashboards only: the exporter's values are not used, so not checked. */ -}}
{{- if not (or $v.prometheusRule.enabled $v.dashboards.enabled) }}
{{- fail "exporter.enabled, prometheusRule.enabled and dashboards.enabled are all false: the chart would render nothing. Turn one of them on." }}
{{- end }}
{{- else }}
{{- if and $v.serviceMonitor.enabled $v.podMonitor.enabled }}
{{- fail "serviceMonitor.enabled and podMonitor.enabled are both true: Prometheus would scrape every exporter twice. Enable one of them." }}
{{- end }}
{{- if and $v.serviceMonitor.enabled (not $v.service.enabled) }}
{{- fail "serviceMonitor.enabled needs service.enabled (a ServiceMonitor selects a Service); turn the Service on, or use podMonitor.enabled instead." }}
{{- end }}
{{- if not (has (toString $v.compatibility) (list "native" "dcgm-4.8.2" "dcgm-4.8.3" "dcgm-4.8.4" "dcgm-4.9" "dcgm-4.10")) }}
{{- fail (printf "compatibility %q is not a profile: use native, dcgm-4.8.2, dcgm-4.8.4 (or dcgm-4.8.3), dcgm-4.9 or dcgm-4.10." (toString $v.compatibility)) }}
{{- end }}
{{- if not (has (toString $v.dcgm.mode) (list "" "off" "remote" "embedded")) }}
{{- fail (printf "dcgm.mode %q is not a mode: use off, remote or embedded (or leave it empty for the exporter's default)." (toString $v.dcgm.mode)) }}
{{- end }}
{{- if and (eq (toString $v.dcgm.mode) "remote") (not $v.dcgm.hostengine) }}
{{- fail "dcgm.mode=remote needs dcgm.hostengine, the standalone hostengine's address (host:port or unix:///path)." }}
{{- end }}
{{- if and (eq (toString $v.dcgm.mode) "off") $v.dcgm.hostengine }}
{{- fail "dcgm.hostengine is set but dcgm.mode=off: the address would be ignored. Leave dcgm.mode empty (remote) or clear dcgm.hostengine." }}
{{- end }}
{{- if not (has $v.counters.preset (list "default" "recommended")) }}
{{- fail (printf "counters.preset %q is not a preset: use \"default\" or \"recommended\", or give the CSV in counters.custom." (toString $v.counters.preset)) }}
{{- end }}
{{- if and $v.counters.custom $v.counters.existingConfigMap }}
{{- fail "counters.custom and counters.existingConfigMap are both set: give the CSV in one place." }}
{{- end }}
{{- if not (kindIs "slice" $v.arguments) }}
{{- fail "arguments must be a list of strings, e.g. [\"--debug\"]." }}
{{- end }}
{{- if not (kindIs "slice" ($v.extraEnv | default list)) }}
{{- fail "extraEnv must be a list of variables as in a pod spec, e.g. [{name: RUST_LOG, value: debug}]." }}
{{- end }}
{{- $userCounters := include "gpu-exporter.userCounters" . | fromJsonArray }}
{{- if $userCounters }}
{{- $chartCounters := list }}
{{- if $v.counters.custom }}{{ $chartCounters = append $chartCounters "counters.custom" }}{{ end }}
{{- if $v.counters.existingConfigMap }}{{ $chartCounters = append $chartCounters (printf "counters.existingConfigMap=%s" $v.counters.existingConfigMap) }}{{ end }}
{{- if ne (toString $v.counters.preset) "default" }}{{ $chartCounters = append $chartCounters (printf "counters.preset=%s" $v.counters.preset) }}{{ end }}
{{- if $chartCounters }}
{{- fail (printf "%s name(s) the counters file, and so does %s: the exporter reads one file. Keep one: drop the -f/--collectors or DCGM_EXPORTER_COLLECTORS to use the chart's counters values, or leave counters.preset at default and counters.custom and counters.existingConfigMap empty to use the file you named." (join ", " $userCounters) (join ", " $chartCounters)) }}
{{- end }}
{{- end }}
{{- $mode := include "gpu-exporter.operatorMode" . }}
{{- if not (has $mode (list "" "clusterPolicy" "gpuCluster")) }}
{{- fail (printf "gpuOperator.mode %q is not a mode: use clusterPolicy (the ClusterPolicy's dcgm-exporter), gpuCluster (the GPUCluster DRA stack's) or leave it empty." $mode) }}
{{- end }}
{{- $claimAPI := toString ((.Values.gpuOperator | default dict).resourceClaimAPIVersion | default "resource.k8s.io/v1") }}
{{- if and (include "gpu-exporter.adminAccessClaim" .) (not (has $claimAPI (list "resource.k8s.io/v1" "resource.k8s.io/v1beta2" "resource.k8s.io/v1beta1"))) }}
{{- fail (printf "gpuOperator.resourceClaimAPIVersion %q: use resource.k8s.io/v1 (Kubernetes 1.34 and later), resource.k8s.io/v1beta2 (1.33) or resource.k8s.io/v1beta1 (1.32)." $claimAPI) }}
{{- end }}
{{- if and (eq $mode "gpuCluster") (not $k.podMapping) }}
{{- fail "gpuOperator.mode=gpuCluster attributes DRA-claimed devices to pods through the kubelet's pod-resources socket, which needs kubernetes.podMapping=true (-k)." }}
{{- end }}
{{- if not $k.podMapping }}
{{- range $v.extraEnv }}
{{- if and (kindIs "map" .) (eq (toString .name) "DCGM_EXPORTER_KUBERNETES") (has (toString .value) (list "1" "t" "T" "true" "TRUE" "True")) }}
{{- fail (printf "extraEnv DCGM_EXPORTER_KUBERNETES=%s turns pod attribution (-k) on, but kubernetes.podMapping=false leaves out the kubelet's socket mount and runs the exporter as uid 65532: set kubernetes.podMapping=true (what the GPU Operator's DaemonSet does), or drop the variable." (toString .value)) }}
{{- end }}
{{- end }}
{{- range $i, $a := $v.arguments }}
{{- if regexMatch "^--?k(ubernetes)?(=(1|t|T|true|TRUE|True))?$" (toString $a) }}
{{- fail (printf "arguments[%d] %q turns pod attribution (-k) on, but kubernetes.podMapping=false leaves out the kubelet's socket mount and runs the exporter as uid 65532: set kubernetes.podMapping=true instead of the flag." $i (toString $a)) }}
{{- end }}
{{- end }}
{{- end }}
{{- $needMeta := list }}
{{- if $k.enablePodLabels }}{{ $needMeta = append $needMeta "kubernetes.enablePodLabels" }}{{ end }}
{{- if $k.enablePodUID }}{{ $needMeta = append $needMeta "kubernetes.enablePodUID" }}{{ end }}
{{- if and $v.kubernetesDRA.enabled (ne $mode "gpuCluster") }}{{ $needMeta = append $needMeta "kubernetesDRA.enabled" }}{{ end }}
{{- $needMapping := $needMeta }}
{{- if $k.processMetrics }}{{ $needMapping = append $needMapping "kubernetes.processMetrics" }}{{ end }}
{{- if $k.virtualGPUs }}{{ $needMapping = append $needMapping "kubernetes.virtualGPUs" }}{{ end }}
{{- $h := $v.health | default dict }}
{{- if $h.nodeConditions }}{{ $needMapping = append $needMapping "health.nodeConditions" }}{{ end }}
{{- if $h.events }}{{ $needMapping = append $needMapping "health.events" }}{{ end }}
{{- if $k.podLabelAllowlistRegex }}{{ $needMapping = append $needMapping "kubernetes.podLabelAllowlistRegex" }}{{ end }}
{{- if and $needMapping (not $k.podMapping) }}
{{- fail (printf "%s need(s) kubernetes.podMapping=true (-k): without it the exporter attributes nothing to pods." (join ", " $needMapping)) }}
{{- end }}
{{- if and $needMeta (not $k.podMetadata) }}
{{- fail (printf "%s read(s) pods through the Kubernetes API, but kubernetes.podMetadata=false says the exporter must not use the API: turn kubernetes.podMetadata on, or those features off." (join ", " $needMeta)) }}
{{- end }}
{{- if and $k.podLabelAllowlistRegex (not $k.enablePodLabels) }}
{{- fail "kubernetes.podLabelAllowlistRegex is set but kubernetes.enablePodLabels=false: the allowlist filters pod labels, so turn pod labels on or drop the list." }}
{{- end }}
{{- range $k.podLabelAllowlistRegex }}
{{- if contains "," . }}
{{- fail (printf "kubernetes.podLabelAllowlistRegex entry %q holds a comma, but the flag takes a comma-separated list: split it into several entries." .) }}
{{- end }}
{{- end }}
{{- if include "gpu-exporter.apiEnabled" . }}
{{- if and (not $v.rbac.create) (or $v.serviceAccount.create (not $v.serviceAccount.name)) }}
{{- fail "rbac.create=false, but the exporter uses the Kubernetes API (kubernetes.podMetadata, pod labels/UID, DRA, health.nodeConditions or health.events) and no existing service account was named: set rbac.create=true, or serviceAccount.create=false with serviceAccount.name naming an account with those grants (docs/least-privilege.md), or turn those features off." }}
{{- end }}
{{- if eq (toString $v.serviceAccount.automountToken) "false" }}
{{- fail "serviceAccount.automountToken=false, but the exporter uses the Kubernetes API (kubernetes.podMetadata, pod labels/UID, DRA, health.nodeConditions or health.events) and needs the token: use auto, or turn those features off." }}
{{- end }}
{{- end }}
{{- if not (has (toString $v.serviceAccount.automountToken) (list "auto" "true" "false")) }}
{{- fail (printf "serviceAccount.automountToken %q: use auto, true or false." (toString $v.serviceAccount.automountToken)) }}
{{- end }}
{{- $tls := $v.tlsServerConfig }}
{{- if not (has $tls.minVersion (list "TLS10" "TLS11" "TLS12" "TLS13")) }}
{{- fail (printf "tlsServerConfig.minVersion %q: use TLS10, TLS11, TLS12 or TLS13." (toString $tls.minVersion)) }}
{{- end }}
{{- if $tls.clientAuthType }}
{{- if not $tls.enabled }}
{{- fail "tlsServerConfig.clientAuthType is set but tlsServerConfig.enabled=false: client certificates need TLS." }}
{{- end }}
{{- if not (has $tls.clientAuthType (list "NoClientCert" "RequestClientCert" "RequireAnyClientCert" "VerifyClientCertIfGiven" "RequireAndVerifyClientCert")) }}
{{- fail (printf "tlsServerConfig.clientAuthType %q: use NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert." $tls.clientAuthType) }}
{{- end }}
{{- end }}
{{- if and (include "gpu-exporter.clientCANeeded" .) (not $tls.existingSecret) (not $tls.clientCASecret) }}
{{- fail (printf "tlsServerConfig.clientAuthType=%s verifies client certificates, but no client CA was given: set tlsServerConfig.clientCASecret (a Secret with ca.crt), or tlsServerConfig.existingSecret with a ca.crt (the self-signed CA the chart makes keeps no key to sign client certificates with)." $tls.clientAuthType) }}
{{- end }}
{{- if and $tls.clientCASecret (not (include "gpu-exporter.clientCANeeded" .)) }}
{{- fail "tlsServerConfig.clientCASecret is set, but tlsServerConfig.clientAuthType does not verify client certificates: use VerifyClientCertIfGiven or RequireAndVerifyClientCert, or drop the Secret." }}
{{- end }}
{{- range $user, $_ := $v.basicAuth.users }}
{{- if contains ":" $user }}
{{- fail (printf "basicAuth.users: the user name %q holds a colon, which basic auth cannot carry." $user) }}
{{- end }}
{{- end }}
{{- $ms := $v.collectIntervalMs }}
{{- if not (or (kindIs "float64" $ms) (kindIs "int64" $ms) (kindIs "int" $ms)) }}
{{- fail (printf "collectIntervalMs %v: must be a number of milliseconds (at least 100)." $ms) }}
{{- else if lt (int64 $ms) 100 }}
{{- fail (printf "collectIntervalMs %v: must be at least 100 (milliseconds)." $ms) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The scrape settings shared by the ServiceMonitor endpoint and the PodMonitor endpoint: the
values of one monitor, plus HTTPS and credentials when the exporter demands them. */}}
{{- define "gpu-exporter.scrapeEndpoint" -}}
{{- $m := .monitor }}
{{- $ := .root }}
port: metrics
path: /metrics
interval: {{ $m.interval }}
scrapeTimeout: {{ $m.scrapeTimeout }}
honorLabels: {{ $m.honorLabels }}
{{- if $.Values.tlsServerConfig.enabled }}
scheme: https
tlsConfig:
  # Pods are scraped by IP, so the name to verify is given explicitly.
  serverName: {{ include "gpu-exporter.serviceDNSName" $ }}
  ca:
    secret:
      name: {{ include "gpu-exporter.tlsSecretName" $ }}
      key: ca.crt
{{- end }}
{{- if $.Values.basicAuth.users }}
basicAuth:
  username:
    name: {{ include "gpu-exporter.scrapeAuthSecretName" $ }}
    key: username
  password:
    name: {{ include "gpu-exporter.scrapeAuthSecretName" $ }}
    key: password
{{- end }}
{{- with $m.relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $team := include "gpu-exporter.teamSourceLabel" $ }}
{{- if or $m.metricRelabelings $team }}
metricRelabelings:
{{- with $m.metricRelabelings }}
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $team }}
  # cost.teamLabel: the team's pod label copied into `team` for the team:* cost rules.
  - sourceLabels: [{{ $team }}]
    regex: (.+)
    targetLabel: team
    action: replace
{{- end }}
{{- end }}
{{- end }}

{{/* The scraped label that holds cost.teamLabel (pod labels are sanitized: [^a-zA-Z0-9_] to
`_`; one named like a built-in label gets `label_`), or "" when it is `team` itself. */}}
{{- define "gpu-exporter.teamSourceLabel" -}}
{{- $l := regexReplaceAll "[^a-zA-Z0-9_]" (toString .Values.cost.teamLabel) "_" }}
{{- if and $l (ne $l "team") }}
{{- if has $l (list "pod" "namespace" "container" "gpu" "UUID" "device" "modelName" "Hostname" "hostname" "pci_bus_id" "GPU_I_ID" "GPU_I_PROFILE" "resource" "vgpu" "pod_uid" "workload_kind" "workload_name" "instance" "job") }}
{{- printf "label_%s" $l }}
{{- else }}
{{- $l }}
{{- end }}
{{- end }}
{{- end }}

{{/* The price rules of cost.prices (and the node pool rule of cost.nodePoolLabel), as the rule
group gpu-exporter.prices; the same rules as alerts/gpu-prices.example.rules.yaml. */}}
{{- define "gpu-exporter.priceGroup" -}}
{{- $c := .Values.cost -}}
- name: gpu-exporter.prices
  rules:
  {{- range $c.prices }}
    - record: accelerator_price_dollars_per_hour
      expr: vector({{ .dollarsPerHour }})
      labels:
        modelName: {{ .modelName | quote }}
        {{- with .nodePool }}
        node_pool: {{ . | quote }}
        {{- end }}
  {{- end }}
  {{- with $c.nodePoolLabel }}
  {{- $label := printf "label_%s" (regexReplaceAll "[^a-zA-Z0-9_]" . "_") }}
    - record: node:accelerator_node_pool:info
      expr: |
        group by (cluster, Hostname, node_pool) (label_replace(label_replace(
          kube_node_labels{ {{- $label }}!=""},
          "Hostname", "$1", "node", "(.+)"),
          "node_pool", "$1", "{{ $label }}", "(.+)"))
  {{- end }}
{{- end }}

{{/* Where the exporter pods run: nodeSelector, affinity and tolerations. Without
gpuOperator.mode the default affinity selects nodes labelled nvidia.com/gpu.present=true
(GPU Feature Discovery); with a mode, the node label the GPU Operator's own exporter
DaemonSet selects (gpu-exporter.operatorDeployLabel) goes into nodeSelector instead, so the
operator's per-node switch and its driver manager's pause apply to these pods too. The Helm
test pods are placed the same way, so they land on a node that has an exporter pod. */}}
{{- define "gpu-exporter.placement" -}}
{{- $deploy := include "gpu-exporter.operatorDeployLabel" . }}
{{- $selector := dict }}
{{- if $deploy }}{{ $_ := set $selector $deploy "true" }}{{ end }}
{{- range $key, $val := .Values.nodeSelector }}{{ $_ := set $selector $key $val }}{{ end }}
{{- with $selector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .Values.affinity }}
affinity:
  {{- toYaml .Values.affinity | nindent 2 }}
{{- else if not $deploy }}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: nvidia.com/gpu.present
              operator: In
              values: ["true"]
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
