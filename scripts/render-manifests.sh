#!/usr/bin/env bash
# Renders the Helm chart (deploy/helm/quiver) into plain manifests for
# people without Helm: deploy/kubernetes/quiver.yaml. CI runs this and then
# "git diff --exit-code deploy/kubernetes deploy/testdata", so the files
# always match the chart; deploy/manifests_test.go decodes them into the
# Kubernetes API types.
#
# The manifests name a Secret the user makes (no token is committed):
#   kubectl create secret generic quiver --from-literal=auth-token="$(openssl rand -hex 32)"
#
# helm runs as a pinned Go module: nothing to install but Go.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM_VERSION=v3.22.0
helm() { go run "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" "$@"; }

out=deploy/kubernetes/quiver.yaml
{
  echo "# Rendered from deploy/helm/quiver by scripts/render-manifests.sh; do not edit."
  echo "# Before applying: make the Secret \"quiver\" with the key auth-token (at least"
  echo "# 16 characters), e.g."
  echo "#   kubectl create secret generic quiver --from-literal=auth-token=\"\$(openssl rand -hex 32)\""
  echo "# and edit the ConfigMap \"quiver\" (servers.yaml) to name your servers."
  helm template quiver deploy/helm/quiver \
    --set secret.existingSecret=quiver
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"

# Every optional part on (ServiceMonitor, PersistentVolumeClaim, a Secret
# made from values), for the same test; not for applying.
all=deploy/testdata/all-options.yaml
mkdir -p "$(dirname "$all")"
{
  echo "# Rendered from deploy/helm/quiver with ci/all-options-values.yaml by"
  echo "# scripts/render-manifests.sh, for deploy/manifests_test.go; do not edit."
  helm template quiver deploy/helm/quiver -f deploy/helm/quiver/ci/all-options-values.yaml
} >"$all.tmp"
mv "$all.tmp" "$all"
echo "wrote $all"
