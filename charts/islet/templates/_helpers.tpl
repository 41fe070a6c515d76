{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "islet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name; every object name starts with it. */}}
{{- define "islet.fullname" -}}
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

{{- define "islet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "islet.labels" -}}
helm.sh/chart: {{ include "islet.chart" . }}
{{ include "islet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: islet
{{- end }}

{{/* Labels that select this release's pods (add app.kubernetes.io/component per workload). */}}
{{- define "islet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "islet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Image reference: registry/repository[:tag][@digest]; a digest pins the image exactly. */}}
{{- define "islet.image" -}}
{{- $img := .image -}}
{{- $registry := .root.Values.image.registry -}}
{{- $tag := default .root.Chart.AppVersion (default .root.Values.image.tag $img.tag) -}}
{{- $ref := ternary $img.repository (printf "%s/%s" $registry $img.repository) (empty $registry) -}}
{{- if $img.digest }}{{ printf "%s:%s@%s" $ref $tag $img.digest }}{{ else }}{{ printf "%s:%s" $ref $tag }}{{ end -}}
{{- end }}

{{/* A third-party image pinned by its own tag (and digest when given). */}}
{{- define "islet.plainImage" -}}
{{- if .digest }}{{ printf "%s:%s@%s" .repository .tag .digest }}{{ else }}{{ printf "%s:%s" .repository .tag }}{{ end -}}
{{- end }}

{{/* Pod selector of one component of this release. */}}
{{- define "islet.componentSelector" -}}
matchLabels:
  app.kubernetes.io/instance: {{ .root.Release.Name }}
  app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Egress peer + port rules reaching Redis (bundled pods or the external CIDRs). */}}
{{- define "islet.redisEgress" -}}
{{- if .Values.redis.bundled.enabled }}
- to:
    - podSelector:
        {{- include "islet.componentSelector" (dict "root" . "component" "redis") | nindent 8 }}
  ports:
    - { protocol: TCP, port: 6379 }
{{- else }}
{{- if not .Values.redis.externalCIDRs }}
{{- fail "redis.externalCIDRs: list the external Redis's addresses (NetworkPolicies allow only them; set networkPolicy.enabled=false to allow everything)" }}
{{- end }}
- to:
    {{- range .Values.redis.externalCIDRs }}
    - ipBlock: { cidr: {{ . }} }
    {{- end }}
  ports:
    {{- range include "islet.redisExternalPorts" . | splitList "," }}
    - { protocol: TCP, port: {{ . }} }
    {{- end }}
{{- end }}
{{- end }}

{{/*
Ports of the external Redis, comma-separated and sorted: redis.externalPort, each sentinel's port
(sentinel mode) and each seed's port (cluster mode), so a topology never silently loses egress.
*/}}
{{- define "islet.redisExternalPorts" -}}
{{- $ports := list (toString .Values.redis.externalPort) -}}
{{- if eq .Values.redis.mode "sentinel" }}
{{- range .Values.redis.sentinels }}{{ $ports = append $ports (regexFind "[0-9]+$" .) }}{{ end }}
{{- end }}
{{- if eq .Values.redis.mode "cluster" }}
{{- range splitList "," .Values.redis.url }}
{{- with regexFind ":[0-9]+(/[0-9]*)?$" (trim .) }}{{ $ports = append $ports (regexFind "[0-9]+" .) }}{{ end }}
{{- end }}
{{- end }}
{{- $ports | uniq | sortAlpha | join "," -}}
{{- end }}

{{/* Egress rule for cluster DNS. */}}
{{- define "islet.dnsEgress" -}}
- to:
    - namespaceSelector:
        matchLabels:
          {{- toYaml .Values.networkPolicy.dns.namespaceLabels | nindent 10 }}
      podSelector:
        matchLabels:
          {{- toYaml .Values.networkPolicy.dns.podLabels | nindent 10 }}
  ports:
    - { protocol: UDP, port: 53 }
    - { protocol: TCP, port: 53 }
{{- end }}

{{/* Ingress peers allowed to scrape metrics. */}}
{{- define "islet.metricsIngress" -}}
- ports:
    - { protocol: TCP, port: {{ .port }} }
  {{- with .root.Values.networkPolicy.prometheusNamespaceLabels }}
  from:
    - namespaceSelector:
        matchLabels:
          {{- toYaml . | nindent 10 }}
  {{- end }}
{{- end }}

{{- define "islet.gateway.fullname" -}}{{ include "islet.fullname" . }}-gateway{{- end }}
{{- define "islet.operator.fullname" -}}{{ include "islet.fullname" . }}-operator{{- end }}
{{- define "islet.runner.fullname" -}}{{ include "islet.fullname" . }}-runner{{- end }}
{{- define "islet.redis.fullname" -}}{{ include "islet.fullname" . }}-redis{{- end }}
{{- define "islet.config.name" -}}{{ include "islet.fullname" . }}-config{{- end }}
{{- define "islet.secret.name" -}}{{ default (printf "%s-secrets" (include "islet.fullname" .)) .Values.secrets.existingSecret }}{{- end }}
{{- define "islet.seccomp.fullname" -}}{{ include "islet.fullname" . }}-seccomp{{- end }}

{{/* Name of one runner pool: <fullname>-<mode>. */}}
{{- define "islet.pool.name" -}}{{ printf "%s-%s" (include "islet.fullname" .root) .mode | trunc 50 | trimSuffix "-" }}{{- end }}

{{/* Redis URL the workloads use: the bundled StatefulSet's Service or the external URL. */}}
{{- define "islet.redis.url" -}}
{{- if .Values.redis.bundled.enabled -}}
redis://{{ include "islet.redis.fullname" . }}.{{ .Release.Namespace }}.svc:6379
{{- else -}}
{{- required "redis.url is required when redis.bundled.enabled is false (or set redis.urlFromSecret)" .Values.redis.url -}}
{{- end -}}
{{- end }}

{{/* Pod Security "restricted" container context, with a seccomp profile given by the caller. */}}
{{- define "islet.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
capabilities:
  drop: ["ALL"]
seccompProfile:
  {{- toYaml .seccomp | nindent 2 }}
{{- end }}

{{/*
Environment every Islet process reads (see services/core/src/config.ts): the ConfigMap; the
secrets come as files (islet.secretEnv), never as environment variables (which leak into
/proc/<pid>/environ, crash dumps and child processes).
*/}}
{{- define "islet.envFrom" -}}
- configMapRef:
    name: {{ include "islet.config.name" . }}
{{- end }}

{{/* Where the release's Secret is mounted in gateway and runner containers. */}}
{{- define "islet.secretMountPath" -}}/var/run/secrets/islet{{- end }}

{{/*
The secret variables as `*_FILE` paths into the mounted Secret (a file whose trimmed content is the
value; services/core/src/config.ts). Mirrors secretEnv() in services/operator/src/deployment.ts.
*/}}
{{- define "islet.secretEnv" -}}
{{- $dir := include "islet.secretMountPath" . -}}
{{- range list "ISLET_SEAL_KEYS" "ISLET_INTERNAL_TOKEN" "ISLET_JOURNAL_ARGS_KEY" }}
- name: {{ . }}_FILE
  value: {{ printf "%s/%s" $dir . }}
{{- end }}
{{- /* Not secret (a key id), but it lives with the keys so a rotation is one Secret edit. */}}
- name: ISLET_SEAL_ACTIVE_KEY_ID
  valueFrom:
    secretKeyRef: { name: {{ include "islet.secret.name" . }}, key: ISLET_SEAL_ACTIVE_KEY_ID, optional: true }
{{- /* A password-carrying URL (redis.urlFromSecret); when absent the ConfigMap's applies. */}}
- name: ISLET_REDIS_URL
  valueFrom:
    secretKeyRef: { name: {{ include "islet.secret.name" . }}, key: ISLET_REDIS_URL, optional: true }
{{- include "islet.redisEnv" . }}
{{- end }}

{{/*
Where the Redis password comes from, as "secret|key"; "" when Redis takes none. redis.auth.existingSecret
first; else the release Secret's ISLET_REDIS_PASSWORD (always for the bundled Redis, and for an
external one when secrets.redisPassword is given). Mirrors the operator's ISLET_RUNNER_REDIS_PASSWORD_*.
*/}}
{{- define "islet.redisPasswordRef" -}}
{{- $a := .Values.redis.auth -}}
{{- if $a.existingSecret -}}
{{ $a.existingSecret }}|{{ $a.existingSecretKey }}
{{- else if or .Values.redis.bundled.enabled .Values.secrets.redisPassword -}}
{{ include "islet.secret.name" . }}|ISLET_REDIS_PASSWORD
{{- end -}}
{{- end }}

{{/*
The Redis password and CA as items projected into the secrets directory, whatever Secret holds them:
one directory for islet-jail --deny. Mirrors secretsVolume() in services/operator/src/deployment.ts.
*/}}
{{- define "islet.redisSecretSources" -}}
{{- with include "islet.redisPasswordRef" . }}
{{- $p := splitList "|" . }}
- secret:
    name: {{ index $p 0 }}
    items:
      - { key: {{ index $p 1 }}, path: redis/password }
{{- end }}
{{- with .Values.redis.tls.caSecret }}
- secret:
    name: {{ . }}
    items:
      - { key: {{ $.Values.redis.tls.caSecretKey }}, path: redis/ca.crt }
{{- end }}
{{- end }}

{{/* ISLET_REDIS_PASSWORD_FILE / ISLET_REDIS_CA_FILE into that directory; mirrors redisFileEnv(). */}}
{{- define "islet.redisEnv" -}}
{{- if include "islet.redisPasswordRef" . }}
- name: ISLET_REDIS_PASSWORD_FILE
  value: {{ include "islet.secretMountPath" . }}/redis/password
{{- end }}
{{- if .Values.redis.tls.caSecret }}
- name: ISLET_REDIS_CA_FILE
  value: {{ include "islet.secretMountPath" . }}/redis/ca.crt
{{- end }}
{{- end }}

{{/*
The Secret (every key) plus the Redis password and CA items as one read-only directory
(group-readable: pods run with fsGroup = their uid).
*/}}
{{- define "islet.secretVolume" -}}
- name: secrets
  projected:
    defaultMode: 288 # 0440 (octal): owner and group read
    sources:
      - secret:
          name: {{ include "islet.secret.name" . }}
      {{- with include "islet.redisSecretSources" . | trim }}
      {{- . | nindent 6 }}
      {{- end }}
{{- end }}

{{- define "islet.secretVolumeMount" -}}
- name: secrets
  mountPath: {{ include "islet.secretMountPath" . }}
  readOnly: true
{{- end }}

{{/*
Checksums of everything a pod reads, as pod annotations: a change rolls the pods. The ConfigMap is
hashed as rendered; a Secret the chart renders is hashed as rendered; a Secret the chart does not
render (existingSecret, or the hook's) cannot be read at template time without `lookup` (which
template-then-apply flows do not have), so it is hashed by name plus secrets.revision: bump
secrets.revision after changing its content (a seal-key rotation) and every pod rolls.
*/}}
{{- define "islet.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/config-configmap.yaml") . | sha256sum }}
{{ include "islet.secretChecksum" . }}
{{- end }}

{{- define "islet.secretChecksum" -}}
checksum/secret: {{ printf "%s|%s|%s|%s" (include (print .Template.BasePath "/secrets-secret.yaml") .) (include "islet.secret.name" .) (include "islet.redisPasswordRef" .) (toString .Values.secrets.revision) | sha256sum }}
{{- end }}

{{/* Egress to the Kubernetes API server: endpoint addresses (not the Service IP) on 443/6443. */}}
{{- define "islet.apiServerEgress" -}}
# Rules match after the CNI's Service translation on most CNIs but not all: list the API server's
# endpoint addresses (kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes),
# not the `kubernetes` Service IP, and both the Service port (443) and the endpoint port (6443).
- to:
    {{- range .Values.networkPolicy.apiServerCIDRs }}
    - ipBlock: { cidr: {{ . }} }
    {{- end }}
  ports:
    {{- range .Values.networkPolicy.apiServerPorts }}
    - { protocol: TCP, port: {{ . }} }
    {{- end }}
{{- end }}

{{/*
The runner pod spec for one pool; mirrors buildPodSpec() in services/operator/src/deployment.ts
(test/chart checks the two agree). Args: root, mode, pool.
*/}}
{{- define "islet.runner.podSpec" -}}
{{- $root := .root -}}
{{- $r := $root.Values.runners -}}
{{- /* runner.json: the broker needs TCP; islet-jail stacks islet/<mode>.json on every sandbox process. */ -}}
{{- $profile := dict "type" "Localhost" "localhostProfile" "islet/runner.json" -}}
automountServiceAccountToken: false
enableServiceLinks: false
serviceAccountName: {{ include "islet.runner.fullname" $root }}
terminationGracePeriodSeconds: {{ $r.terminationGracePeriodSeconds }}
{{- with $r.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ $r.uid }}
  runAsGroup: {{ $r.uid }}
  fsGroup: {{ $r.uid }}
  seccompProfile:
    {{- toYaml $profile | nindent 4 }}
{{- with $root.Values.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
containers:
  - name: runner
    image: {{ include "islet.image" (dict "root" $root "image" $r.image) }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    env:
      - name: ISLET_RUNNER_MODES
        value: {{ .mode | quote }}
      - name: ISLET_SANDBOX_JAIL
        value: "on"
      - name: ISLET_RUNNER_METRICS_PORT
        value: {{ $r.metricsPort | quote }}
      - name: ISLET_RUNNER_SHUTDOWN_GRACE_MS
        value: {{ $r.shutdownGraceMs | quote }}
      - name: ISLET_RUNNER_NAME
        valueFrom:
          fieldRef:
            fieldPath: metadata.name
      {{- include "islet.secretEnv" $root | nindent 6 }}
    envFrom:
      {{- include "islet.envFrom" $root | nindent 6 }}
    ports:
      - name: metrics
        containerPort: {{ $r.metricsPort }}
        protocol: TCP
    resources:
      {{- toYaml .pool.resources | nindent 6 }}
    securityContext:
      {{- include "islet.containerSecurityContext" (dict "uid" $r.uid "seccomp" $profile) | nindent 6 }}
    livenessProbe:
      httpGet: { path: /healthz, port: metrics }
      periodSeconds: 10
      failureThreshold: 3
    readinessProbe:
      httpGet: { path: /readyz, port: metrics }
      periodSeconds: 5
      failureThreshold: 2
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      - name: workspace
        mountPath: {{ $root.Values.workspaces.mountPath }}
      {{- include "islet.secretVolumeMount" $root | nindent 6 }}
      {{- with $r.extraVolumeMounts }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
{{- with $r.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $r.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "islet.runtimeClassName" (dict "root" $root "own" $r.runtimeClassName) }}
runtimeClassName: {{ . }}
{{- end }}
{{- with $r.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $r.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      medium: Memory
      sizeLimit: {{ .pool.tmpSizeLimit }}
  {{- include "islet.workspace.volume" $root | nindent 2 }}
  {{- include "islet.secretVolume" $root | nindent 2 }}
  {{- with $r.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
The session workspace volume (named "workspace"), mounted at workspaces.mountPath by the gateway
and every runner pod: the shared ReadWriteMany claim, or else an emptyDir per pod (dev only: the
files API then sees only what its own pod wrote). Mirrors workspaceVolume() in
services/operator/src/deployment.ts.
*/}}
{{- define "islet.workspace.volume" -}}
- name: workspace
{{- with .Values.workspaces.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ . }}
{{- else }}
  emptyDir:
    sizeLimit: {{ .Values.workspaces.sizeLimit | default "1Gi" }}
{{- end }}
{{- end }}

{{/*
PodDisruptionBudget API: policy/v1 from Kubernetes 1.21, policy/v1beta1 before (the project's own
control-plane tests run a 1.20 API server; helm template without a cluster assumes a current one).
*/}}
{{- define "islet.pdb.apiVersion" -}}
{{- if semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version -}}
policy/v1
{{- else -}}
policy/v1beta1
{{- end -}}
{{- end }}

{{/*
Extra pod labels and annotations: the global podLabels/podAnnotations with the component's own
(`own`) on top, minus the keys Islet sets itself (selectors, components, checksums, scrape hints),
which always win. Call with (dict "root" $ "own" <component>.podLabels). Renders YAML lines.
*/}}
{{- define "islet.extraPodLabels" -}}
{{- $out := dict }}
{{- range $k, $v := merge (dict) (.own | default dict) (.root.Values.podLabels | default dict) }}
{{- if not (or (hasPrefix "app.kubernetes.io/" $k) (hasPrefix "islet.dev/" $k) (eq $k "helm.sh/chart")) }}
{{- $_ := set $out $k (toString $v) }}
{{- end }}
{{- end }}
{{- if $out }}{{ toYaml $out }}{{ end }}
{{- end }}

{{- define "islet.extraPodAnnotations" -}}
{{- $out := dict }}
{{- range $k, $v := merge (dict) (.own | default dict) (.root.Values.podAnnotations | default dict) }}
{{- if not (or (hasPrefix "checksum/" $k) (hasPrefix "prometheus.io/" $k) (hasPrefix "islet.dev/" $k)) }}
{{- $_ := set $out $k (toString $v) }}
{{- end }}
{{- end }}
{{- if $out }}{{ toYaml $out }}{{ end }}
{{- end }}

{{/* A pod's RuntimeClass: the component's own, else the global runtimeClassName; "" = the node's default. */}}
{{- define "islet.runtimeClassName" -}}
{{- .own | default .root.Values.runtimeClassName -}}
{{- end }}
