{{/* Names and labels. */}}
{{- define "fleetplace.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "fleetplace.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The selector labels of one worker: (dict "root" $ "worker" "scheduler") */}}
{{- define "fleetplace.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .worker }}
{{- end -}}

{{/* The topic catalogue and each worker's access, generated from the code (services/kafka_access.py). */}}
{{- define "fleetplace.access" -}}
{{- .Files.Get "files/kafka-access.json" -}}
{{- end -}}

{{- define "fleetplace.bootstrap" -}}
{{- if .Values.kafka.bootstrapServers -}}
{{- .Values.kafka.bootstrapServers -}}
{{- else if .Values.kafka.strimzi.enabled -}}
{{- printf "%s-kafka-bootstrap:%d" .Values.kafka.strimzi.cluster (int .Values.kafka.strimzi.port) -}}
{{- else -}}
{{- fail "kafka.bootstrapServers: required (host:port[,host:port...]) unless kafka.strimzi.enabled" -}}
{{- end -}}
{{- end -}}

{{/* The KafkaUser (and its Secret) of one worker under Strimzi: (dict "root" $ "worker" "scheduler") */}}
{{- define "fleetplace.kafkaUser" -}}
{{- printf "%s-%s" (include "fleetplace.fullname" .root) .worker | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* A Kubernetes name for a topic: lower case, DNS-1123 subdomain. */}}
{{- define "fleetplace.topicResourceName" -}}
{{- regexReplaceAll "[^a-z0-9.-]" (lower .) "-" | trunc 253 | trimSuffix "-" | trimSuffix "." -}}
{{- end -}}

{{/* The partitions of a catalogue topic: the work partitions for partitioned topics. */}}
{{- define "fleetplace.partitions" -}}
{{- if .spec.partitioned -}}{{ int .root.Values.topics.workPartitions }}{{- else -}}{{ int .spec.partitions }}{{- end -}}
{{- end -}}

{{/*
The Kafka security protocol of every client: TLS with Strimzi (both authentications run over its
TLS listener) or kafka.tls, SASL with Strimzi SCRAM or kafka.sasl.
*/}}
{{- define "fleetplace.securityProtocol" -}}
{{- $k := .Values.kafka -}}
{{- $tls := or $k.tls.enabled $k.strimzi.enabled -}}
{{- $sasl := or $k.sasl.enabled (and $k.strimzi.enabled (eq $k.strimzi.authentication "scram-sha-512")) -}}
{{- if and $tls $sasl -}}SASL_SSL{{- else if $tls -}}SSL{{- else if $sasl -}}SASL_PLAINTEXT{{- else -}}PLAINTEXT{{- end -}}
{{- end -}}

{{/*
Pod security: the Pod Security Standard "restricted" (non-root, no privilege escalation, every
capability dropped, RuntimeDefault seccomp), and a read-only root filesystem. The image's user is
fleetplace (uid 10001, compose/Dockerfile): a numeric uid lets the kubelet check runAsNonRoot.
*/}}
{{- define "fleetplace.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "fleetplace.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The Kafka settings of a client: env entries and the volumes/mounts of its certificates.
(dict "root" $ "worker" "scheduler")
*/}}
{{- define "fleetplace.kafkaEnv" -}}
{{- $k := .root.Values.kafka -}}
- name: KAFKA_BOOTSTRAP_SERVERS
  value: {{ include "fleetplace.bootstrap" .root | quote }}
- name: KAFKA_SECURITY_PROTOCOL
  value: {{ include "fleetplace.securityProtocol" .root | quote }}
- name: KAFKA_CLIENT_ID
  value: {{ printf "fleetplace-%s" .worker | quote }}
{{- if or $k.tls.enabled $k.strimzi.enabled }}
- name: KAFKA_SSL_CAFILE
  value: /etc/fleetplace/kafka-ca/ca.crt
{{- end }}
{{- if and $k.strimzi.enabled (eq $k.strimzi.authentication "tls") }}
- name: KAFKA_SSL_CERTFILE
  value: /etc/fleetplace/kafka-user/user.crt
- name: KAFKA_SSL_KEYFILE
  value: /etc/fleetplace/kafka-user/user.key
{{- else if and $k.tls.enabled $k.tls.clientCertSecret.name (not $k.strimzi.enabled) }}
- name: KAFKA_SSL_CERTFILE
  value: /etc/fleetplace/kafka-user/tls.crt
- name: KAFKA_SSL_KEYFILE
  value: /etc/fleetplace/kafka-user/tls.key
{{- end }}
{{- if and $k.strimzi.enabled (eq $k.strimzi.authentication "scram-sha-512") }}
- name: KAFKA_SASL_MECHANISM
  value: SCRAM-SHA-512
- name: KAFKA_SASL_USERNAME
  value: {{ include "fleetplace.kafkaUser" . | quote }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "fleetplace.kafkaUser" . }}
      key: password
{{- else if $k.sasl.enabled }}
- name: KAFKA_SASL_MECHANISM
  value: {{ $k.sasl.mechanism | quote }}
- name: KAFKA_SASL_USERNAME
  value: {{ required "kafka.sasl.username: required with kafka.sasl.enabled" $k.sasl.username | quote }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "kafka.sasl.passwordSecret.name: required with kafka.sasl.enabled" $k.sasl.passwordSecret.name }}
      key: {{ $k.sasl.passwordSecret.key }}
{{- end }}
{{- end -}}

{{- define "fleetplace.kafkaVolumeMounts" -}}
{{- $k := .root.Values.kafka -}}
- name: tmp
  mountPath: /tmp
{{- if or $k.tls.enabled $k.strimzi.enabled }}
- name: kafka-ca
  mountPath: /etc/fleetplace/kafka-ca
  readOnly: true
{{- end }}
{{- if or (and $k.strimzi.enabled (eq $k.strimzi.authentication "tls")) (and $k.tls.enabled $k.tls.clientCertSecret.name (not $k.strimzi.enabled)) }}
- name: kafka-user
  mountPath: /etc/fleetplace/kafka-user
  readOnly: true
{{- end }}
{{- end -}}

{{- define "fleetplace.kafkaVolumes" -}}
{{- $k := .root.Values.kafka -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if $k.strimzi.enabled }}
- name: kafka-ca
  secret:
    secretName: {{ printf "%s-cluster-ca-cert" $k.strimzi.cluster }}
    items:
      - key: ca.crt
        path: ca.crt
{{- else if $k.tls.enabled }}
- name: kafka-ca
  secret:
    secretName: {{ required "kafka.tls.caSecret.name: required with kafka.tls.enabled" $k.tls.caSecret.name }}
    items:
      - key: {{ $k.tls.caSecret.key }}
        path: ca.crt
{{- end }}
{{- if and $k.strimzi.enabled (eq $k.strimzi.authentication "tls") }}
- name: kafka-user
  secret:
    secretName: {{ include "fleetplace.kafkaUser" . }}
    items:
      - key: user.crt
        path: user.crt
      - key: user.key
        path: user.key
{{- else if and $k.tls.enabled $k.tls.clientCertSecret.name (not $k.strimzi.enabled) }}
- name: kafka-user
  secret:
    secretName: {{ $k.tls.clientCertSecret.name }}
    items:
      - key: {{ $k.tls.clientCertSecret.certKey }}
        path: tls.crt
      - key: {{ $k.tls.clientCertSecret.keyKey }}
        path: tls.key
{{- end }}
{{- end -}}
