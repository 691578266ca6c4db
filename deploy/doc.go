// Package deploy holds no code: its tests check the files that build and
// run quiver elsewhere than from source. The Dockerfile's build stage is
// run as a plain "go build" with the same flags; the Kubernetes manifests
// rendered from the Helm chart (deploy/kubernetes/quiver.yaml, written by
// scripts/render-manifests.sh) are decoded strictly into the Kubernetes
// API types. See README, "Image, chart and release".
package deploy
