#!/usr/bin/env bash
# The Helm chart (deploy/helm/outbound-relay), without a cluster: `helm lint` and `helm
# template` for each documented values case (the chart's ci/*-values.yaml, the cases
# docs/deploy.md shows), and every rendered manifest validated offline against Kubernetes'
# schemas with `kubernetes-validate --strict` (unknown fields refused). Also checks what a
# schema cannot: the relay.toml each case renders is read by the relay itself (no unknown
# key, sources well formed), the pod runs non-root on a read-only root filesystem, and a
# values mistake fails the render with its reason. helm (Go module proxy) and
# kubernetes-validate (PyPI) are installed into .tools/deploy on first use.
set -euo pipefail
source "$(dirname "$0")/../../scripts/deploy-env.sh"   # ROOT, DT
need_helm
need_validate
CHART=deploy/helm/outbound-relay
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
RELAY="${OUTBOUND_RELAY_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/outbound-relay}"

echo "--- helm lint (default values and each case)"
"$HELM" lint --strict "$CHART" >/dev/null
cases=("$CHART"/ci/*-values.yaml)
for values in "${cases[@]}"; do
  "$HELM" lint --strict "$CHART" -f "$values" >/dev/null
done
checked=0
for values in "${cases[@]}"; do
  name="$(basename "$values" -values.yaml)"
  manifest="$OUT/$name.yaml"
  "$HELM" template relay "$CHART" --namespace relay -f "$values" >"$manifest"
  # kubernetes-validate knows the built-in kinds; the ServiceMonitor is the Prometheus
  # operator's CRD, checked by its fields below instead.
  "$DT/venv/bin/python" - "$manifest" "$OUT/$name" <<'PY'
import sys, yaml, os
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
os.makedirs(sys.argv[2], exist_ok=True)
for i, d in enumerate(docs):
    kind = d["kind"]
    if kind == "ServiceMonitor":
        ep = d["spec"]["endpoints"][0]
        assert ep["path"] == "/metrics" and ep["port"] == "http", ep
        assert ep["authorization"]["credentials"]["key"], ep
        continue
    with open(f"{sys.argv[2]}/{i:02d}-{kind}.yaml", "w") as f:
        yaml.safe_dump(d, f)
    if kind == "StatefulSet":
        pod = d["spec"]["template"]["spec"]
        c = pod["containers"][0]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert pod["enableServiceLinks"] is False
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    if kind == "ConfigMap":
        open(f"{sys.argv[2]}/relay.toml", "w").write(d["data"]["relay.toml"])
PY
  "$KUBE_VALIDATE" --strict --quiet "$OUT/$name"/*.yaml
  # The relay reads the rendered relay.toml as it would in the pod (listen and data_dir
  # moved to this machine; the secrets the pod mounts are stand-ins).
  if [ -x "$RELAY" ]; then
    sec="$OUT/$name/secrets"
    mkdir -p "$sec/sources"
    echo stand-in >"$sec/admin-token"
    for s in $(sed -n 's|^shared_secret_file = "/run/secrets/outbound-relay/sources/\(.*\)"|\1|p' "$OUT/$name/relay.toml"); do
      echo stand-in >"$sec/sources/$s"
    done
    sed -e "s|/run/secrets/outbound-relay|$sec|; s|^listen = .*|listen = \"127.0.0.1:0\"|" \
      -e "s|^data_dir = .*|data_dir = \"$OUT/$name/data\"|" "$OUT/$name/relay.toml" >"$OUT/$name/local.toml"
    # Started for a moment: a config error exits 2 at once; a good one prints its address.
    addr="$(OUTBOUND_RELAY_ADMIN_TOKEN_FILE="$sec/admin-token" OUTBOUND_RELAY_SPOOL=true \
      timeout -s TERM 3 "$RELAY" --config "$OUT/$name/local.toml" 2>"$OUT/$name/relay.log" | head -n1)" || true
    if [ -z "$addr" ]; then
      echo "the relay refused $name's relay.toml:" >&2
      cat "$OUT/$name/relay.log" "$OUT/$name/relay.toml" >&2
      exit 1
    fi
  fi
  echo "$name: helm template -> $(grep -c '^kind:' "$manifest") objects, valid (--strict); relay.toml read by the relay"
  checked=$((checked + 1))
done

echo "--- a values mistake fails the render with its reason"
expect_fail() {
  local why=$1
  shift
  if "$HELM" template relay "$CHART" "$@" >"$OUT/fail.yaml" 2>"$OUT/fail.err"; then
    echo "helm template $* rendered; expected: $why" >&2
    exit 1
  fi
  grep -q "$why" "$OUT/fail.err" || { cat "$OUT/fail.err" >&2; exit 1; }
}
expect_fail "mode fleet needs redis.url" --set mode=fleet
expect_fail "is not single or fleet" --set mode=cluster
expect_fail "redis.url and redis.existingSecret are for mode fleet" --set redis.url=redis://r:6379/0
expect_fail "settings.listen is the chart's" --set settings.listen=0.0.0.0:1
echo "helm: lint and $checked values cases rendered and validated"
