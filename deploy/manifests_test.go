package deploy

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/quiver-mcp/quiver/registry"
)

// manifests is deploy/kubernetes/quiver.yaml, which
// scripts/render-manifests.sh renders from the chart with its default
// values (CI re-renders it and fails on a difference), decoded strictly:
// a field the Kubernetes API does not have (a typo, a wrong nesting) is an
// error here as it would be at "kubectl apply --validate=strict".
type manifests struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	configMaps  []corev1.ConfigMap
	secrets     []corev1.Secret
	accounts    []corev1.ServiceAccount
	pdbs        []policyv1.PodDisruptionBudget
	claims      []corev1.PersistentVolumeClaim
	monitors    []serviceMonitor
}

// serviceMonitor is the part of prometheus-operator's
// monitoring.coreos.com/v1 ServiceMonitor that the chart writes (the
// operator's Go types would bring its whole module for one object); a
// field beyond it fails the strict decoding, to be added here knowingly.
type serviceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
		} `json:"endpoints"`
	} `json:"spec"`
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func readManifests(t *testing.T, file string) manifests {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (scripts/render-manifests.sh writes it)", err)
	}
	var m manifests
	for i, doc := range docSeparator.Split(string(b), -1) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s, document %d: %v", file, i, err)
		}
		if meta.Kind == "" && meta.APIVersion == "" {
			continue // comments only
		}
		// decode refuses unknown fields and duplicate keys.
		decode := func(into any) {
			t.Helper()
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("%s, document %d (%s %s): %v", file, i, meta.APIVersion, meta.Kind, err)
			}
		}
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			var o appsv1.Deployment
			decode(&o)
			m.deployments = append(m.deployments, o)
		case "v1 Service":
			var o corev1.Service
			decode(&o)
			m.services = append(m.services, o)
		case "v1 ConfigMap":
			var o corev1.ConfigMap
			decode(&o)
			m.configMaps = append(m.configMaps, o)
		case "v1 Secret":
			var o corev1.Secret
			decode(&o)
			m.secrets = append(m.secrets, o)
		case "v1 ServiceAccount":
			var o corev1.ServiceAccount
			decode(&o)
			m.accounts = append(m.accounts, o)
		case "policy/v1 PodDisruptionBudget":
			var o policyv1.PodDisruptionBudget
			decode(&o)
			m.pdbs = append(m.pdbs, o)
		case "v1 PersistentVolumeClaim":
			var o corev1.PersistentVolumeClaim
			decode(&o)
			m.claims = append(m.claims, o)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			var o serviceMonitor
			decode(&o)
			m.monitors = append(m.monitors, o)
		default:
			t.Fatalf("%s, document %d: %s %s is not a kind this test decodes; add it", file, i, meta.APIVersion, meta.Kind)
		}
	}
	return m
}

// flagValue is the value after flag in args ("" when absent).
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestKubernetesManifests checks what the plain manifests promise: the
// issue's replica count, probes on the metrics port, a non-root
// read-only container, the token, database URL and sealing key from the
// Secret the user makes, servers.yaml as a ConfigMap folder that quiver
// can reload, and a Service and a PodDisruptionBudget that find the pods.
func TestKubernetesManifests(t *testing.T) {
	m := readManifests(t, filepath.Join("kubernetes", "quiver.yaml"))
	if len(m.deployments) != 1 || len(m.services) != 1 || len(m.configMaps) != 1 || len(m.pdbs) != 1 {
		t.Fatalf("want one Deployment, Service, ConfigMap and PodDisruptionBudget; got %d, %d, %d, %d",
			len(m.deployments), len(m.services), len(m.configMaps), len(m.pdbs))
	}
	if len(m.secrets) != 0 {
		t.Errorf("the plain manifests hold a Secret (%s): a token in the repository would be everyone's; they must name one the user makes", m.secrets[0].Name)
	}
	d := m.deployments[0]
	pod := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %s, want 2 (the issue's default; values.yaml and NOTES say what one replica changes)", replicas(d))
	}
	if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("the Deployment's selector %v does not match its pods' labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}

	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("the pod does not set runAsNonRoot: true")
	}
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("the pod's runAsUser is unset or root; want the image's non-root USER 65532")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("the pod mounts a service account token; quiver never calls the Kubernetes API")
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("the container has no securityContext")
	default:
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("allowPrivilegeEscalation is not false")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, corev1.Capability("ALL")) {
			t.Errorf("capabilities do not drop ALL")
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources = %+v, want cpu and memory requests and a memory limit", c.Resources)
	}

	// The flags quiver runs with, and the ports, probes and mounts that
	// must agree with them.
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("args = %q, want quiver serve", c.Args)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, port := range map[string]string{"--http": "http", "--metrics": "metrics"} {
		addr := flagValue(c.Args, flag)
		if !strings.HasPrefix(addr, "0.0.0.0:") || !strings.HasSuffix(addr, ":"+strconv.Itoa(int(ports[port]))) {
			t.Errorf("%s %q does not listen on all addresses at the container port %q (%d)", flag, addr, port, ports[port])
		}
	}
	for kind, want := range map[string]struct {
		probe *corev1.Probe
		path  string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
		if want.probe == nil || want.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", kind)
			continue
		}
		if g := want.probe.HTTPGet; g.Path != want.path || g.Port.String() != "metrics" {
			t.Errorf("the %s probe gets %s on port %s, want %s on the metrics port", kind, g.Path, g.Port.String(), want.path)
		}
	}

	// The token (quiver refuses to listen beyond loopback without one), the
	// database URL and the sealing key come from one Secret.
	secretRefs := map[string]*corev1.SecretKeySelector{}
	for _, e := range c.Env {
		if e.Value != "" && strings.HasPrefix(e.Name, "QUIVER_") {
			t.Errorf("env %s has a literal value; it belongs in the Secret", e.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secretRefs[e.Name] = e.ValueFrom.SecretKeyRef
		}
	}
	for name, key := range map[string]string{"QUIVER_AUTH_TOKEN": "auth-token", "QUIVER_DATABASE_URL": "database-url", "QUIVER_SEALING_KEY": "sealing-key"} {
		ref := secretRefs[name]
		if ref == nil {
			t.Errorf("env %s is not taken from a Secret", name)
			continue
		}
		if ref.Name != "quiver" || ref.Key != key {
			t.Errorf("env %s from secret %q key %q, want secret \"quiver\" key %q (the one the manifests' header says to make)", name, ref.Name, ref.Key, key)
		}
		optional := ref.Optional != nil && *ref.Optional
		if optional != (name != "QUIVER_AUTH_TOKEN") {
			t.Errorf("env %s optional = %v; the token is required, the team issue's database URL and sealing key are not yet", name, optional)
		}
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mountedAt := func(dir string) (corev1.VolumeMount, corev1.Volume, bool) {
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == dir {
				return vm, volumes[vm.Name], true
			}
		}
		return corev1.VolumeMount{}, corev1.Volume{}, false
	}

	// servers.yaml: a ConfigMap mounted as the folder --config names, never
	// a subPath (a subPath never sees an update, so the live reload would
	// never happen).
	configFile := flagValue(c.Args, "--config")
	vm, vol, ok := mountedAt(path.Dir(configFile))
	switch {
	case !ok:
		t.Errorf("nothing is mounted at %s, the folder of --config %s", path.Dir(configFile), configFile)
	case vm.SubPath != "" || vm.SubPathExpr != "":
		t.Errorf("the config is mounted with a subPath; ConfigMap updates would never reach it")
	case vol.ConfigMap == nil || vol.ConfigMap.Name != m.configMaps[0].Name:
		t.Errorf("%s is not the ConfigMap %q", path.Dir(configFile), m.configMaps[0].Name)
	default:
		servers, ok := m.configMaps[0].Data[path.Base(configFile)]
		if !ok {
			t.Fatalf("the ConfigMap has no key %s", path.Base(configFile))
		}
		// And quiver accepts what it holds.
		f := filepath.Join(t.TempDir(), "servers.yaml")
		if err := os.WriteFile(f, []byte(servers), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := registry.LoadConfigLookup(f, func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("quiver does not accept the ConfigMap's servers.yaml: %v", err)
		}
	}
	stateDir := flagValue(c.Args, "--state-dir")
	if vm, vol, ok := mountedAt(stateDir); !ok || vm.ReadOnly || (vol.EmptyDir == nil && vol.PersistentVolumeClaim == nil) {
		t.Errorf("--state-dir %q is not a writable emptyDir or PersistentVolumeClaim (the root file system is read-only)", stateDir)
	}
	for _, vm := range c.VolumeMounts {
		if _, ok := volumes[vm.Name]; !ok {
			t.Errorf("volume mount %q names no volume", vm.Name)
		}
	}

	svc := m.services[0]
	if !selects(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("the Service's selector %v does not find the pods (%v)", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	svcPorts := map[string]string{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = p.TargetPort.String()
	}
	if svcPorts["http"] != "http" || svcPorts["metrics"] != "metrics" {
		t.Errorf("the Service's ports %v, want http and metrics to the container ports of those names", svcPorts)
	}
	pdb := m.pdbs[0]
	if pdb.Spec.Selector == nil || !selects(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("the PodDisruptionBudget's selector does not find the pods")
	}
	if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
		t.Errorf("the PodDisruptionBudget sets neither minAvailable nor maxUnavailable")
	}
}

// TestKubernetesManifestsAllOptions checks the chart rendered with every
// optional part on (deploy/helm/quiver/ci/all-options-values.yaml): the
// Secret it makes holds what the pod's env names, the state dir is the
// claim it makes, a ServiceMonitor scrapes the metrics port, and the
// toggles file is one quiver accepts.
func TestKubernetesManifestsAllOptions(t *testing.T) {
	m := readManifests(t, filepath.Join("testdata", "all-options.yaml"))
	if len(m.deployments) != 1 || len(m.secrets) != 1 || len(m.claims) != 1 || len(m.monitors) != 1 || len(m.services) != 1 || len(m.accounts) != 1 {
		t.Fatalf("want one Deployment, Secret, PersistentVolumeClaim, ServiceMonitor, Service and ServiceAccount; got %d, %d, %d, %d, %d, %d",
			len(m.deployments), len(m.secrets), len(m.claims), len(m.monitors), len(m.services), len(m.accounts))
	}
	d, sec := m.deployments[0], m.secrets[0]
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("with a ReadWriteOnce claim: replicas %s, strategy %q; want 1 and Recreate (the old pod must let go of the volume)", replicas(d), d.Spec.Strategy.Type)
	}
	if pod.ServiceAccountName != m.accounts[0].Name {
		t.Errorf("the pod runs as service account %q, the chart makes %q", pod.ServiceAccountName, m.accounts[0].Name)
	}
	for _, e := range c.Env {
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil {
			continue
		}
		if ref.SecretKeyRef.Name != sec.Name {
			t.Errorf("env %s names secret %q, the chart made %q", e.Name, ref.SecretKeyRef.Name, sec.Name)
		} else if _, ok := sec.Data[ref.SecretKeyRef.Key]; !ok {
			t.Errorf("env %s names key %q, which the chart's Secret lacks (it has %v)", e.Name, ref.SecretKeyRef.Key, slices.Sorted(maps.Keys(sec.Data)))
		}
	}
	if tok := sec.Data["auth-token"]; len(tok) < 16 {
		t.Errorf("the Secret's auth-token has %d bytes; quiver refuses fewer than 16", len(tok))
	}
	var state *corev1.Volume
	for i, v := range pod.Volumes {
		if v.Name == "state" {
			state = &pod.Volumes[i]
		}
	}
	if state == nil || state.PersistentVolumeClaim == nil || state.PersistentVolumeClaim.ClaimName != m.claims[0].Name {
		t.Errorf("the state volume is not the claim %q the chart makes", m.claims[0].Name)
	}
	if got := c.Args[len(c.Args)-2:]; !slices.Equal(got, []string{"--log-level", "debug"}) {
		t.Errorf("extraArgs do not end the args: %q", c.Args)
	}

	sm := m.monitors[0]
	if !selects(sm.Spec.Selector.MatchLabels, m.services[0].Labels) {
		t.Errorf("the ServiceMonitor's selector %v does not find the Service (%v)", sm.Spec.Selector.MatchLabels, m.services[0].Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes %+v, want /metrics on the Service's metrics port", sm.Spec.Endpoints)
	}
	if sm.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("serviceMonitor.labels are not on the ServiceMonitor: %v", sm.Metadata.Labels)
	}

	var cm *corev1.ConfigMap
	for i := range m.configMaps {
		cm = &m.configMaps[i]
	}
	if cm == nil {
		t.Fatal("no ConfigMap")
	}
	if _, err := registry.ParseToggles(registry.TogglesFile, []byte(cm.Data["tools.yaml"])); err != nil || cm.Data["tools.yaml"] == "" {
		t.Errorf("the ConfigMap's tools.yaml (%q) is not one quiver accepts: %v", cm.Data["tools.yaml"], err)
	}
}

func replicas(d appsv1.Deployment) string {
	if d.Spec.Replicas == nil {
		return "unset"
	}
	return strconv.Itoa(int(*d.Spec.Replicas))
}
