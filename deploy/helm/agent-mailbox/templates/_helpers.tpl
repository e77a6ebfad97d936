{{/* The release's base name, at most 63 characters. */}}
{{- define "mailbox.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mailbox.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mailbox.labels" -}}
{{ include "mailbox.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mailbox.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "mailbox.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ .Values.serviceAccount.name | default (include "mailbox.fullname" .) }}
{{- else -}}
{{ .Values.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{/* The Secret of the secret variables: an existing one, or the chart's (secret.yaml). */}}
{{- define "mailbox.secretName" -}}
{{ .Values.secrets.existingSecret | default (include "mailbox.fullname" .) }}
{{- end -}}

{{/* Whether the chart makes a Secret: for the variables, or for PEM text given as values. */}}
{{- define "mailbox.chartSecret" -}}
{{- if or (not .Values.secrets.existingSecret) (and .Values.temporal.tls.enabled (not .Values.temporal.tls.existingSecret)) (not .Values.managedDkim.existingSecret) -}}
true
{{- end -}}
{{- end -}}

{{- define "mailbox.temporalTlsSecret" -}}
{{ .Values.temporal.tls.existingSecret | default (include "mailbox.fullname" .) }}
{{- end -}}

{{- define "mailbox.dkimSecret" -}}
{{ .Values.managedDkim.existingSecret | default (include "mailbox.fullname" .) }}
{{- end -}}

{{- define "mailbox.dkimKey" -}}
{{ if .Values.managedDkim.existingSecret }}{{ .Values.managedDkim.key }}{{ else }}managed-dkim-key.pem{{ end }}
{{- end -}}

{{/*
The environment of every role and of the migration Job. Secret values are referenced, never written here.
Call with (dict "root" $ "role" "api"|"smtp"|"worker"|"migrate").
*/}}
{{- define "mailbox.env" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
- name: BIND_HOST
  value: "0.0.0.0"
- name: DATA_DIR
  value: /var/lib/mailbox
{{- if has .role (list "api" "smtp" "worker") }}
{{- /* The drain ends 5 s before the kubelet's SIGKILL (terminationGracePeriodSeconds). */}}
- name: SHUTDOWN_TIMEOUT_MS
  value: {{ mul (max 1 (sub (index $v .role).terminationGracePeriodSeconds 5)) 1000 | quote }}
{{- end }}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address is required" $v.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ $v.temporal.namespace | quote }}
- name: TEMPORAL_TASK_QUEUE
  value: {{ $v.temporal.taskQueue | quote }}
{{- if $v.temporal.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- if $v.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ $v.temporal.tls.serverName | quote }}
{{- end }}
{{- if or $v.temporal.tls.existingSecret $v.temporal.tls.ca }}
- name: TEMPORAL_TLS_CA
  value: /etc/mailbox/temporal-tls/ca.crt
{{- end }}
{{- if or $v.temporal.tls.existingSecret $v.temporal.tls.cert }}
- name: TEMPORAL_TLS_CERT
  value: /etc/mailbox/temporal-tls/tls.crt
- name: TEMPORAL_TLS_KEY
  value: /etc/mailbox/temporal-tls/tls.key
{{- end }}
{{- end }}
- name: MANAGED_DKIM_SELECTOR
  value: {{ $v.managedDkim.selector | quote }}
- name: MANAGED_DKIM_KEY
  value: /etc/mailbox/managed-dkim/private-key.pem
{{- range $name, $value := $v.config }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- range $key := list "DATABASE_URL" "CURSOR_SECRET" "DKIM_KEY_SECRET" }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef:
      name: {{ include "mailbox.secretName" $root }}
      key: {{ $key }}
{{- end }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "mailbox.secretName" $root }}
      key: TEMPORAL_API_KEY
      optional: true
{{- if eq .role "api" }}
- name: HTTP_PORT
  value: {{ $v.api.port | quote }}
{{- end }}
{{- if eq .role "smtp" }}
- name: SMTP_PORT
  value: {{ $v.smtp.port | quote }}
- name: SMTP_PROXY_PROTOCOL
  value: {{ $v.smtp.proxyProtocol | quote }}
{{- if $v.smtp.proxyProtocol }}
- name: SMTP_PROXY_TRUSTED
  value: {{ required "smtp.proxyTrusted (the load balancer's addresses or CIDR ranges) is required with smtp.proxyProtocol" (join "," $v.smtp.proxyTrusted) | quote }}
{{- end }}
{{- if $v.smtp.tls.existingSecret }}
- name: SMTP_TLS_CERT
  value: /etc/mailbox/smtp-tls/tls.crt
- name: SMTP_TLS_KEY
  value: /etc/mailbox/smtp-tls/tls.key
{{- end }}
{{- end }}
{{- if has .role (list "api" "smtp" "worker") }}
- name: STATUS_PORT
  value: {{ (index $v .role).statusPort | quote }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- if ne .role "migrate" }}
{{- with (index $v .role).extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Volumes of every pod: the writable DATA_DIR and /tmp (the root file system is read-only), and the PEM files. */}}
{{- define "mailbox.volumes" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
- name: managed-dkim
  secret:
    secretName: {{ include "mailbox.dkimSecret" $root }}
    defaultMode: 0400
    items:
      - key: {{ include "mailbox.dkimKey" $root }}
        path: private-key.pem
{{- if $v.temporal.tls.enabled }}
- name: temporal-tls
  secret:
    secretName: {{ include "mailbox.temporalTlsSecret" $root }}
    defaultMode: 0400
    {{- if not $v.temporal.tls.existingSecret }}
    items:
      {{- if $v.temporal.tls.ca }}
      - { key: temporal-ca.crt, path: ca.crt }
      {{- end }}
      {{- if $v.temporal.tls.cert }}
      - { key: temporal-tls.crt, path: tls.crt }
      - { key: temporal-tls.key, path: tls.key }
      {{- end }}
    {{- end }}
{{- end }}
{{- if and (eq .role "smtp") $v.smtp.tls.existingSecret }}
- name: smtp-tls
  secret:
    secretName: {{ $v.smtp.tls.existingSecret }}
    defaultMode: 0400
{{- end }}
{{- end -}}

{{- define "mailbox.volumeMounts" -}}
{{- $v := .root.Values -}}
- { name: data, mountPath: /var/lib/mailbox }
- { name: tmp, mountPath: /tmp }
- { name: managed-dkim, mountPath: /etc/mailbox/managed-dkim, readOnly: true }
{{- if $v.temporal.tls.enabled }}
- { name: temporal-tls, mountPath: /etc/mailbox/temporal-tls, readOnly: true }
{{- end }}
{{- if and (eq .role "smtp") $v.smtp.tls.existingSecret }}
- { name: smtp-tls, mountPath: /etc/mailbox/smtp-tls, readOnly: true }
{{- end }}
{{- end -}}

{{/* The pod spec's common part: account, security, placement. */}}
{{- define "mailbox.podCommon" -}}
{{- $v := .root.Values -}}
serviceAccountName: {{ include "mailbox.serviceAccountName" .root }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "mailbox.volumes" . | nindent 2 }}
{{- end -}}
