{{/* The chart's name. */}}
{{- define "herald.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, the prefix of every object's name (at most 50 characters, so
that "-worker", "-serve", "-codec" and "-namespace-setup" fit in 63). */}}
{{- define "herald.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 47 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "herald.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "herald.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: (dict "ctx" $ "component" "worker"). */}}
{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: {{ include "herald.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image, tag defaulting to the chart's appVersion. */}}
{{- define "herald.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "herald.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "herald.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the payload key file, and its key in that Secret. Refuses to render
without keys unless codecKeys.plaintext is set. */}}
{{- define "herald.keysSecret" -}}
{{- if .Values.codecKeys.existingSecret }}
{{- .Values.codecKeys.existingSecret }}
{{- else if .Values.codecKeys.keys }}
{{- printf "%s-codec-keys" (include "herald.fullname" .) }}
{{- end }}
{{- end }}

{{- define "herald.keysSecretKey" -}}
{{- if .Values.codecKeys.existingSecret }}
{{- .Values.codecKeys.existingSecretKey }}
{{- else }}
{{- "codec.key" }}
{{- end }}
{{- end }}

{{/* Fails the render when no payload key is given and plaintext is not asked for. */}}
{{- define "herald.checkKeys" -}}
{{- if and (not (include "herald.keysSecret" .)) (not .Values.codecKeys.plaintext) }}
{{- fail "codecKeys: give the payload key file (herald keygen keys.txt; --set-file codecKeys.keys=keys.txt) or codecKeys.existingSecret; codecKeys.plaintext=true stores payloads unencrypted (development only)" }}
{{- end }}
{{- end }}

{{/* Where the key file is mounted in every container. */}}
{{- define "herald.keysPath" -}}/etc/herald/codec{{- end }}

{{/* Environment every Herald process shares: the cluster, the namespace, the task queue,
the key file. */}}
{{- define "herald.env" -}}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address: the Temporal frontend's host:port" .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ required "temporal.namespace" .Values.temporal.namespace | quote }}
{{- with .Values.temporal.taskQueue }}
- name: HERALD_TASK_QUEUE
  value: {{ . | quote }}
{{- end }}
{{- with include "herald.keysEnv" . }}
{{- . }}
{{- end }}
{{- with include "herald.temporalTLSEnv" . }}
{{- . }}
{{- end }}
{{- end }}

{{/* Where the Secret of temporal.tls.existingSecret is mounted. */}}
{{- define "herald.temporalTLSPath" -}}/etc/herald/temporal-tls{{- end }}

{{/* Environment for a Temporal frontend behind TLS, mTLS or an API key: the temporal CLI's
variables, which every Herald command reads. Fails the render on settings that cannot
connect. */}}
{{- define "herald.temporalTLSEnv" -}}
{{- $t := .Values.temporal.tls }}
{{- $dir := include "herald.temporalTLSPath" . }}
{{- if and (not $t.enabled) (or $t.existingSecret $t.serverName) }}
{{- fail "temporal.tls: existingSecret or serverName is set but temporal.tls.enabled is false: set temporal.tls.enabled=true" }}
{{- end }}
{{- if $t.enabled }}
{{- if and $t.existingSecret $t.certKey (not $t.keyKey) }}
{{- fail "temporal.tls.keyKey: the client certificate (certKey) needs its private key's key in the Secret" }}
{{- end }}
- name: TEMPORAL_TLS
  value: "true"
{{- if and $t.existingSecret $t.certKey }}
- name: TEMPORAL_TLS_CERT
  value: {{ printf "%s/%s" $dir $t.certKey | quote }}
- name: TEMPORAL_TLS_KEY
  value: {{ printf "%s/%s" $dir $t.keyKey | quote }}
{{- end }}
{{- if and $t.existingSecret $t.caKey }}
- name: TEMPORAL_TLS_CA
  value: {{ printf "%s/%s" $dir $t.caKey | quote }}
{{- end }}
{{- with $t.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- with .Values.temporal.apiKey.existingSecret }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ required "temporal.apiKey.existingSecretKey: the key in the Secret that holds the API key" $.Values.temporal.apiKey.existingSecretKey }}
{{- end }}
{{- end }}

{{/* The volume and mount of temporal.tls.existingSecret. */}}
{{- define "herald.temporalTLSVolume" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{- define "herald.temporalTLSMount" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  mountPath: {{ include "herald.temporalTLSPath" . }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "herald.keysEnv" -}}
{{- if include "herald.keysSecret" . }}
- name: HERALD_CODEC_KEY_FILE
  value: {{ printf "%s/%s" (include "herald.keysPath" .) (include "herald.keysSecretKey" .) | quote }}
{{- end }}
{{- end }}

{{/* The key file's volume and its mount. */}}
{{- define "herald.keysVolume" -}}
{{- if include "herald.keysSecret" . }}
- name: codec-keys
  secret:
    secretName: {{ include "herald.keysSecret" . }}
    defaultMode: 0440
    items:
      - key: {{ include "herald.keysSecretKey" . }}
        path: {{ include "herald.keysSecretKey" . }}
{{- end }}
{{- end }}

{{- define "herald.keysMount" -}}
{{- if include "herald.keysSecret" . }}
- name: codec-keys
  mountPath: {{ include "herald.keysPath" . }}
  readOnly: true
{{- end }}
{{- end }}

{{/* Pod annotations: a checksum of the chart-made key Secret, so that a key change rolls the
pods (the README's rotation order is then one upgrade per step). */}}
{{- define "herald.keysChecksum" -}}
{{- if and .Values.codecKeys.keys (not .Values.codecKeys.existingSecret) }}
checksum/codec-keys: {{ .Values.codecKeys.keys | sha256sum }}
{{- end }}
{{- end }}

{{/* Pod-level settings every Deployment shares; component values win over the global ones. */}}
{{- define "herald.podCommon" -}}
{{- $c := .component }}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
serviceAccountName: {{ include "herald.serviceAccountName" .ctx }}
automountServiceAccountToken: {{ .ctx.Values.automountServiceAccountToken }}
securityContext:
  {{- toYaml .ctx.Values.podSecurityContext | nindent 2 }}
{{- with (default .ctx.Values.nodeSelector $c.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default .ctx.Values.tolerations $c.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default .ctx.Values.affinity $c.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod metadata labels and annotations of one component. */}}
{{- define "herald.podMeta" -}}
labels:
  {{- include "herald.labels" .ctx | nindent 2 }}
  app.kubernetes.io/component: {{ .name }}
  {{- with .ctx.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := merge (dict) (.component.podAnnotations | default dict) (.ctx.Values.podAnnotations | default dict) }}
{{- $sum := include "herald.keysChecksum" .ctx }}
{{- if or $ann $sum }}
annotations:
  {{- with $sum }}
  {{- . | trim | nindent 2 }}
  {{- end }}
  {{- with $ann }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end }}
