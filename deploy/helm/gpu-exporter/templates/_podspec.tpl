{{/* The exporter's pod spec, shared by the DaemonSet and the `helm test` pod that runs
`gpu-exporter check` with the same flags, environment, mounts, user and node placement.
Called with (dict "root" $ "check" BOOL): with check, the container runs `check` before the
DaemonSet's flags and has no ports or probes. */}}
{{- define "gpu-exporter.podSpec" -}}
{{- $root := .root }}
{{- $check := .check }}
{{- $fullname := include "gpu-exporter.fullname" $root }}
{{- $k := $root.Values.kubernetes }}
{{- $web := include "gpu-exporter.webConfigEnabled" $root }}
{{- $tls := $root.Values.tlsServerConfig }}
{{- $countersFile := printf "%s/default-counters.csv" (include "gpu-exporter.countersDir" $root) }}
{{- $gpuCluster := include "gpu-exporter.gpuCluster" $root }}
{{- $adminClaim := include "gpu-exporter.adminAccessClaim" $root }}
{{- $extraEnvNames := include "gpu-exporter.extraEnvNames" $root | fromJsonArray }}
{{- /* The chart's flags; values.arguments are appended after them. The chart's -f only when
arguments and extraEnv name no counters file: theirs wins, without a second -f. */ -}}
{{- $args := list }}
{{- if not (include "gpu-exporter.userCounters" $root | fromJsonArray) }}
{{- $args = list "-f" $countersFile }}
{{- end }}
{{- $args = concat $args (list "-c" ($root.Values.collectIntervalMs | int64 | toString)) }}
{{- if ne (toString $root.Values.compatibility) "native" }}{{ $args = append $args (printf "--compatibility=%s" $root.Values.compatibility) }}{{ end }}
{{- with $root.Values.cardinality }}
{{- if and .nvlinkLinks (ne (toString .nvlinkLinks) "totals") }}{{ $args = append $args (printf "--nvlink-links=%s" .nvlinkLinks) }}{{ end }}
{{- if .includeFamilies }}{{ $args = append $args (printf "--include-families=%s" (join "," .includeFamilies)) }}{{ end }}
{{- if .excludeFamilies }}{{ $args = append $args (printf "--exclude-families=%s" (join "," .excludeFamilies)) }}{{ end }}
{{- if .dropLabels }}{{ $args = append $args (printf "--drop-labels=%s" (join "," .dropLabels)) }}{{ end }}
{{- if and .maxLabelsPerSeries (ne (int64 .maxLabelsPerSeries) 30) }}{{ $args = append $args (printf "--max-labels-per-series=%d" (int64 .maxLabelsPerSeries)) }}{{ end }}
{{- if .seriesLabels }}{{ $args = append $args (printf "--series-labels=%s" .seriesLabels) }}{{ end }}
{{- end }}
{{- with $root.Values.dcgm }}
{{- if .mode }}{{ $args = append $args (printf "--dcgm-mode=%s" .mode) }}{{ end }}
{{- if .hostengine }}{{ $args = append $args (printf "--remote-hostengine-info=%s" .hostengine) }}{{ end }}
{{- end }}
{{- if $k.podMapping }}
{{- $args = concat $args (list "-k" (printf "--pod-resources-kubelet-socket=%s/kubelet.sock" (trimSuffix "/" $root.Values.kubeletPath)) (printf "--kubernetes-pod-metadata=%t" (eq (include "gpu-exporter.podWatch" $root) "true")) (printf "--kubernetes-process-metrics=%t" (and $k.processMetrics true))) }}
{{- if $k.enablePodLabels }}{{ $args = append $args "--kubernetes-enable-pod-labels" }}{{ end }}
{{- if $k.podLabelAllowlistRegex }}{{ $args = append $args (printf "--kubernetes-pod-label-allowlist-regex=%s" (join "," $k.podLabelAllowlistRegex)) }}{{ end }}
{{- if $k.enablePodUID }}{{ $args = append $args "--kubernetes-enable-pod-uid" }}{{ end }}
{{- if $k.virtualGPUs }}{{ $args = append $args "--kubernetes-virtual-gpus" }}{{ end }}
{{- /* gpuOperator.mode=gpuCluster turns DRA on through KUBERNETES_ENABLE_DRA, as the operator's DaemonSet does. */ -}}
{{- if and $root.Values.kubernetesDRA.enabled (not $gpuCluster) }}{{ $args = append $args "--kubernetes-enable-dra" }}{{ end }}
{{- with $root.Values.health }}
{{- if .nodeConditions }}{{ $args = append $args "--kubernetes-node-conditions" }}{{ end }}
{{- if .events }}{{ $args = append $args "--kubernetes-events" }}{{ end }}
{{- end }}
{{- end }}
{{- if $web }}
{{- $args = concat $args (list "--web-config-file" (printf "%s/web-config.yml" (include "gpu-exporter.webConfigDir" $root))) }}
{{- end }}
{{- $args = concat $args $root.Values.arguments }}
{{- /* Security contexts: the chart's computed defaults, then the keys given in values. */ -}}
{{- $podSC := dict "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- range $key, $val := $root.Values.podSecurityContext }}{{ $_ := set $podSC $key $val }}{{ end }}
{{- $sc := dict "allowPrivilegeEscalation" false "privileged" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL")) "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- if $k.podMapping }}
{{- $_ := set $sc "runAsUser" 0 }}
{{- $_ := set $sc "runAsNonRoot" false }}
{{- else }}
{{- $_ := set $sc "runAsUser" 65532 }}
{{- $_ := set $sc "runAsGroup" 65532 }}
{{- $_ := set $sc "runAsNonRoot" true }}
{{- end }}
{{- range $key, $val := $root.Values.securityContext }}{{ $_ := set $sc $key $val }}{{ end }}
{{- /* Probes: /health and /ready over the scheme the server speaks; a TCP check when the server
demands client certificates, which the kubelet cannot present. */ -}}
{{- $scheme := ternary "HTTPS" "HTTP" (and $tls.enabled true) }}
serviceAccountName: {{ include "gpu-exporter.serviceAccountName" $root }}
automountServiceAccountToken: {{ include "gpu-exporter.automountToken" $root | eq "true" }}
hostPID: {{ include "gpu-exporter.hostPID" $root | eq "true" }}
hostNetwork: false
{{- with $root.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $root.Values.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $podSC | nindent 2 }}
{{- if $adminClaim }}
# gpuOperator.mode=gpuCluster: the node's GPUs through an admin-access claim (resourceclaimtemplate.yaml).
resourceClaims:
  - name: admin-gpus
    resourceClaimTemplateName: {{ include "gpu-exporter.adminClaimTemplateName" $root }}
{{- end }}
{{- include "gpu-exporter.placement" $root | trim | nindent 0 }}
containers:
  - name: {{ ternary "check" "gpu-exporter" $check }}
    image: {{ include "gpu-exporter.image" $root | quote }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      {{- if $check }}
      - "check"
      {{- end }}
      {{- range $args }}
      - {{ . | toString | quote }}
      {{- end }}
    # The chart's variables, each left out where extraEnv sets the same name (extraEnv's wins).
    env:
      {{- if not (has "NODE_NAME" $extraEnvNames) }}
      - name: NODE_NAME
        valueFrom:
          fieldRef:
            fieldPath: spec.nodeName
      {{- end }}
      # NVML needs only the driver's utility capability: the NVIDIA runtime then mounts
      # libnvidia-ml.so.1 and the /dev/nvidia* nodes of every GPU.
      {{- if not (has "NVIDIA_VISIBLE_DEVICES" $extraEnvNames) }}
      - name: NVIDIA_VISIBLE_DEVICES
        value: all
      {{- end }}
      {{- if not (has "NVIDIA_DRIVER_CAPABILITIES" $extraEnvNames) }}
      - name: NVIDIA_DRIVER_CAPABILITIES
        value: utility
      {{- end }}
      {{- if and $gpuCluster (not (has "KUBERNETES_ENABLE_DRA" $extraEnvNames)) }}
      # gpuOperator.mode=gpuCluster: DRA claims resolved through the ResourceSlices.
      - name: KUBERNETES_ENABLE_DRA
        value: "true"
      {{- end }}
      {{- with $root.Values.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- if not $check }}
    ports:
      - name: metrics
        containerPort: 9400
        protocol: TCP
    livenessProbe:
      {{- if include "gpu-exporter.clientCertRequired" $root }}
      tcpSocket:
        port: metrics
      {{- else }}
      httpGet:
        path: /health
        port: metrics
        scheme: {{ $scheme }}
      {{- end }}
      initialDelaySeconds: 5
      periodSeconds: 10
      timeoutSeconds: 5
      failureThreshold: 6
    readinessProbe:
      {{- if include "gpu-exporter.clientCertRequired" $root }}
      tcpSocket:
        port: metrics
      {{- else }}
      httpGet:
        path: /ready
        port: metrics
        scheme: {{ $scheme }}
      {{- end }}
      initialDelaySeconds: 2
      periodSeconds: 5
      timeoutSeconds: 3
      failureThreshold: 3
    {{- end }}
    {{- $resources := deepCopy ($root.Values.resources | default dict) }}
    {{- if $adminClaim }}{{ $_ := set $resources "claims" (list (dict "name" "admin-gpus")) }}{{ end }}
    {{- with $resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      {{- toYaml $sc | nindent 6 }}
    volumeMounts:
      # The whole ConfigMap as a directory (never subPath), so that edits reach the file
      # and the exporter reloads it without a restart; not over /etc/dcgm-exporter, whose
      # files (the image's) stay visible.
      - name: counters
        mountPath: {{ include "gpu-exporter.countersDir" $root }}
        readOnly: true
      {{- if $k.podMapping }}
      - name: pod-resources
        mountPath: {{ $root.Values.kubeletPath }}
        readOnly: true
      {{- end }}
      {{- if $web }}
      - name: web-config
        mountPath: {{ include "gpu-exporter.webConfigDir" $root }}
        readOnly: true
      {{- end }}
      {{- if $tls.enabled }}
      - name: tls
        mountPath: {{ include "gpu-exporter.tlsDir" $root }}
        readOnly: true
      {{- end }}
      {{- if and (include "gpu-exporter.clientCANeeded" $root) $tls.clientCASecret }}
      - name: client-ca
        mountPath: {{ include "gpu-exporter.clientCADir" $root }}
        readOnly: true
      {{- end }}
      {{- with $root.Values.extraVolumeMounts }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
volumes:
  - name: counters
    configMap:
      name: {{ include "gpu-exporter.countersConfigMapName" $root }}
  {{- if $k.podMapping }}
  - name: pod-resources
    hostPath:
      path: {{ $root.Values.kubeletPath }}
      type: Directory
  {{- end }}
  {{- if $web }}
  - name: web-config
    secret:
      secretName: {{ include "gpu-exporter.webConfigSecretName" $root }}
  {{- end }}
  {{- if $tls.enabled }}
  - name: tls
    secret:
      secretName: {{ include "gpu-exporter.tlsSecretName" $root }}
  {{- end }}
  {{- if and (include "gpu-exporter.clientCANeeded" $root) $tls.clientCASecret }}
  - name: client-ca
    secret:
      secretName: {{ $tls.clientCASecret }}
  {{- end }}
  {{- with $root.Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
