package chartcheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is Herald's chart, beside this module.
var chartDir = filepath.Join("..", "herald")

var rel = Release{Name: "herald", Namespace: "herald"}

// values reads the chart's CI values files (ci/NAME-values.yaml) and then applies the YAML
// overrides, later ones winning.
func values(t *testing.T, files []string, overrides ...string) map[string]any {
	t.Helper()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = filepath.Join(chartDir, "ci", f+"-values.yaml")
	}
	vals, err := LoadValues(paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overrides {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(o), &m); err != nil {
			t.Fatalf("override %q: %v", o, err)
		}
		vals = mergeMaps(vals, m)
	}
	return vals
}

// mergeMaps merges src into dst, recursively for maps; src wins.
func mergeMaps(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// renderValid renders, lints, decodes and validates; it returns the objects by "Kind/name".
func renderValid(t *testing.T, vals map[string]any) (map[string]Object, string) {
	t.Helper()
	for _, m := range Lint(chartDir, vals, rel.Namespace) {
		t.Errorf("helm lint: %s", m.Error())
	}
	out, err := Render(chartDir, vals, rel)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("decode:\n%v", err)
	}
	if err := Validate(objs); err != nil {
		t.Fatalf("validate:\n%v", err)
	}
	byKey := map[string]Object{}
	for _, o := range objs {
		byKey[o.Kind+"/"+o.Name] = o
	}
	return byKey, out[filepath.Join("herald", "templates", "NOTES.txt")]
}

func keys(m map[string]Object) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

func container(t *testing.T, objs map[string]Object, deployment string) corev1.Container {
	t.Helper()
	o, ok := objs["Deployment/"+deployment]
	if !ok {
		t.Fatalf("no Deployment %s in %v", deployment, keys(objs))
	}
	return o.Value.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
}

func env(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func TestDefaults(t *testing.T) {
	// `helm lint` on the chart as it is: its `fail` for the missing key is only logged there.
	for _, m := range Lint(chartDir, map[string]any{}, rel.Namespace) {
		t.Errorf("helm lint with the chart's own values: %s", m.Error())
	}
	objs, notes := renderValid(t, values(t, []string{"minimal"}))
	want := []string{
		"Deployment/herald-serve", "Deployment/herald-worker", "PersistentVolumeClaim/herald-tokens",
		"Secret/herald-codec-keys", "Service/herald-serve", "ServiceAccount/herald",
	}
	if got := keys(objs); !slices.Equal(got, want) {
		t.Fatalf("objects:\n got %v\nwant %v", got, want)
	}
	w := container(t, objs, "herald-worker")
	if w.Image != "herald:0.1.0" {
		t.Errorf("image %q, want herald:<appVersion>", w.Image)
	}
	if !slices.Equal(w.Args, []string{"worker", "--metrics-listen", "0.0.0.0:9090"}) {
		t.Errorf("worker args %q", w.Args)
	}
	for name, want := range map[string]string{
		"TEMPORAL_ADDRESS": "temporal-frontend:7233", "TEMPORAL_NAMESPACE": "default",
		"HERALD_CODEC_KEY_FILE": "/etc/herald/codec/codec.key",
	} {
		if got, _ := env(w, name); got != want {
			t.Errorf("worker %s=%q, want %q", name, got, want)
		}
	}
	d := objs["Deployment/herald-worker"].Value.(*appsv1.Deployment)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("worker replicas %v, want 2", d.Spec.Replicas)
	}
	if d.Spec.Template.Annotations["checksum/codec-keys"] == "" {
		t.Error("worker pods carry no checksum of the key Secret: a key change would not roll them")
	}
	s := objs["Deployment/herald-serve"].Value.(*appsv1.Deployment)
	if s.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("serve on a ReadWriteOnce volume: strategy %q, want Recreate", s.Spec.Strategy.Type)
	}
	if got, _ := env(s.Spec.Template.Spec.Containers[0], "HERALD_TOKENS_FILE"); got != "/var/lib/herald/tokens.json" {
		t.Errorf("HERALD_TOKENS_FILE=%q", got)
	}
	if !strings.Contains(notes, "herald token create --operator") || !strings.Contains(notes, "namespace setup") {
		t.Errorf("NOTES.txt does not say how to create a token and set up the namespace:\n%s", notes)
	}
}

func TestAllOptions(t *testing.T) {
	objs, notes := renderValid(t, values(t, []string{"all-options"}))
	want := []string{
		"Deployment/herald-prod-codec", "Deployment/herald-prod-serve", "Deployment/herald-prod-worker",
		"HorizontalPodAutoscaler/herald-prod-worker", "Ingress/herald-prod-serve", "Job/herald-prod-namespace-setup",
		"Service/herald-prod-codec", "Service/herald-prod-serve",
	}
	if got := keys(objs); !slices.Equal(got, want) {
		t.Fatalf("objects (existing Secrets and ServiceAccount: none made):\n got %v\nwant %v", got, want)
	}
	w := container(t, objs, "herald-prod-worker")
	if w.Image != "registry.example.com/herald:0.2.0" || w.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %q %q", w.Image, w.ImagePullPolicy)
	}
	if got, _ := env(w, "HERALD_ALLOW_CIDRS"); got != "10.20.0.0/16,192.168.0.0/24" {
		t.Errorf("HERALD_ALLOW_CIDRS=%q", got)
	}
	if got, _ := env(w, "HERALD_CODEC_KEY_FILE"); got != "/etc/herald/codec/keys.txt" {
		t.Errorf("HERALD_CODEC_KEY_FILE=%q (existingSecretKey)", got)
	}
	if got, _ := env(w, "HERALD_TASK_QUEUE"); got != "herald-prod" {
		t.Errorf("HERALD_TASK_QUEUE=%q", got)
	}
	for _, c := range []corev1.Container{w, container(t, objs, "herald-prod-serve"), objs["Job/herald-prod-namespace-setup"].Value.(*batchv1.Job).Spec.Template.Spec.Containers[0]} {
		for name, want := range map[string]string{
			"TEMPORAL_TLS": "true", "TEMPORAL_TLS_CERT": "/etc/herald/temporal-tls/tls.crt", "TEMPORAL_TLS_KEY": "/etc/herald/temporal-tls/tls.key",
			"TEMPORAL_TLS_CA": "/etc/herald/temporal-tls/ca.crt", "TEMPORAL_TLS_SERVER_NAME": "temporal.example.com",
		} {
			if got, _ := env(c, name); got != want {
				t.Errorf("%s: %s=%q, want %q", c.Name, name, got, want)
			}
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "TEMPORAL_API_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef.Name == "temporal-api-key" && e.ValueFrom.SecretKeyRef.Key == "api-key"
		}) {
			t.Errorf("%s: no TEMPORAL_API_KEY from the Secret temporal-api-key: %v", c.Name, c.Env)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "temporal-tls" && m.ReadOnly }) {
			t.Errorf("%s: the Temporal TLS Secret is not mounted: %v", c.Name, c.VolumeMounts)
		}
	}
	if !slices.Contains(w.Args, "--require-https") || !slices.Contains(w.Args, "30s,2m,10m") {
		t.Errorf("worker args %q", w.Args)
	}
	wd := objs["Deployment/herald-prod-worker"].Value.(*appsv1.Deployment)
	if wd.Spec.Template.Spec.ServiceAccountName != "herald-runtime" || wd.Spec.Template.Spec.Affinity == nil {
		t.Errorf("worker pod: service account %q, affinity %v", wd.Spec.Template.Spec.ServiceAccountName, wd.Spec.Template.Spec.Affinity)
	}
	if wd.Spec.Template.Annotations["prometheus.io/scrape"] != "true" || wd.Spec.Template.Annotations["example.com/owner"] != "payments" {
		t.Errorf("worker pod annotations %v", wd.Spec.Template.Annotations)
	}
	hpa := objs["HorizontalPodAutoscaler/herald-prod-worker"].Value.(*autoscalingv2.HorizontalPodAutoscaler)
	if *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 12 || len(hpa.Spec.Metrics) != 2 {
		t.Errorf("HPA %d..%d, %d metrics", *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas, len(hpa.Spec.Metrics))
	}
	s := container(t, objs, "herald-prod-serve")
	if !slices.Contains(s.Args, "--tls-cert") || s.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("serve with TLS: args %q, probe scheme %q", s.Args, s.ReadinessProbe.HTTPGet.Scheme)
	}
	sd := objs["Deployment/herald-prod-serve"].Value.(*appsv1.Deployment)
	for _, v := range sd.Spec.Template.Spec.Volumes {
		if v.Name == "tokens" && (v.Secret == nil || v.Secret.SecretName != "herald-tokens") {
			t.Errorf("tokens volume %+v, want the Secret herald-tokens", v.VolumeSource)
		}
	}
	ing := objs["Ingress/herald-prod-serve"].Value.(*networkingv1.Ingress)
	if len(ing.Spec.TLS) != 1 || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("ingress TLS %v class %v", ing.Spec.TLS, ing.Spec.IngressClassName)
	}
	job := objs["Job/herald-prod-namespace-setup"].Value.(*batchv1.Job)
	if job.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" ||
		!slices.Equal(job.Spec.Template.Spec.Containers[0].Args, []string{"namespace", "setup", "--retention", "168h"}) {
		t.Errorf("namespace setup job: %v %q", job.Annotations, job.Spec.Template.Spec.Containers[0].Args)
	}
	c := container(t, objs, "herald-prod-codec")
	if !slices.Contains(c.Args, "https://temporal.example.com") {
		t.Errorf("codec args %q", c.Args)
	}
	if !strings.Contains(notes, "https://herald.example.com/") {
		t.Errorf("NOTES.txt does not show the ingress address:\n%s", notes)
	}
}

// TestVariants renders the options the two files above leave out.
func TestVariants(t *testing.T) {
	for name, tc := range map[string]struct {
		override string
		check    func(t *testing.T, objs map[string]Object)
	}{
		"tokens file from values": {`serve: {tokens: {file: '{"tokens": []}'}}`, func(t *testing.T, objs map[string]Object) {
			sec, ok := objs["Secret/herald-tokens"]
			if !ok || sec.Value.(*corev1.Secret).Data["tokens.json"] == nil {
				t.Errorf("no tokens Secret: %v", keys(objs))
			}
			if _, ok := objs["PersistentVolumeClaim/herald-tokens"]; ok {
				t.Error("a claim is made although the tokens come from a Secret")
			}
		}},
		"shared volume, three serve pods": {`serve: {replicaCount: 3, tokens: {persistence: {accessModes: [ReadWriteMany], storageClass: nfs}}}`, func(t *testing.T, objs map[string]Object) {
			d := objs["Deployment/herald-serve"].Value.(*appsv1.Deployment)
			if *d.Spec.Replicas != 3 || d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
				t.Errorf("replicas %d strategy %q", *d.Spec.Replicas, d.Spec.Strategy.Type)
			}
			pvc := objs["PersistentVolumeClaim/herald-tokens"].Value.(*corev1.PersistentVolumeClaim)
			if *pvc.Spec.StorageClassName != "nfs" {
				t.Errorf("storage class %v", pvc.Spec.StorageClassName)
			}
		}},
		"existing claim": {`serve: {replicaCount: 2, tokens: {persistence: {existingClaim: herald-tokens-rwx}}}`, func(t *testing.T, objs map[string]Object) {
			if _, ok := objs["PersistentVolumeClaim/herald-tokens"]; ok {
				t.Error("a claim is made although existingClaim is given")
			}
		}},
		"no persistence": {`serve: {tokens: {persistence: {enabled: false}}}`, func(t *testing.T, objs map[string]Object) {
			for _, v := range objs["Deployment/herald-serve"].Value.(*appsv1.Deployment).Spec.Template.Spec.Volumes {
				if v.Name == "tokens" && v.EmptyDir == nil {
					t.Errorf("tokens volume %+v, want emptyDir", v.VolumeSource)
				}
			}
		}},
		"temporal TLS, system roots": {`temporal: {tls: {enabled: true}}`, func(t *testing.T, objs map[string]Object) {
			w := container(t, objs, "herald-worker")
			if got, _ := env(w, "TEMPORAL_TLS"); got != "true" {
				t.Errorf("TEMPORAL_TLS=%q", got)
			}
			for _, name := range []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CA", "TEMPORAL_API_KEY"} {
				if _, ok := env(w, name); ok {
					t.Errorf("%s set without a Secret", name)
				}
			}
		}},
		"plaintext, no key": {`codecKeys: {keys: "", plaintext: true}`, func(t *testing.T, objs map[string]Object) {
			w := container(t, objs, "herald-worker")
			if !slices.Contains(w.Args, "--plaintext") {
				t.Errorf("worker args %q", w.Args)
			}
			if _, ok := env(w, "HERALD_CODEC_KEY_FILE"); ok || len(w.VolumeMounts) != 1 {
				t.Errorf("plaintext worker still mounts keys: %v", w.VolumeMounts)
			}
		}},
		"serve off, codec on with inline keys": {`{serve: {enabled: false}, codecServer: {enabled: true}}`, func(t *testing.T, objs map[string]Object) {
			if _, ok := objs["Deployment/herald-serve"]; ok {
				t.Error("serve rendered although disabled")
			}
			c := container(t, objs, "herald-codec")
			if got, _ := env(c, "HERALD_CODEC_KEY_FILE"); got != "/etc/herald/codec/codec.key" {
				t.Errorf("codec key file %q", got)
			}
			if _, ok := env(c, "TEMPORAL_ADDRESS"); ok {
				t.Error("the codec server does not talk to Temporal")
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			objs, _ := renderValid(t, values(t, []string{"minimal"}, tc.override))
			tc.check(t, objs)
		})
	}
}

// TestRefused checks that values the chart cannot honour fail the render with a message that
// names the value.
func TestRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		files    []string
		override string
		want     string
	}{
		"no payload key":               {nil, "", "codecKeys: give the payload key file"},
		"codec server, plaintext":      {nil, `{codecKeys: {plaintext: true}, codecServer: {enabled: true}}`, "the codec server needs the payload keys"},
		"serve pods on one RWO":        {[]string{"minimal"}, `serve: {replicaCount: 2}`, "ReadWriteMany"},
		"tls without a secret":         {[]string{"minimal"}, `serve: {tls: {enabled: true}}`, "serve.tls.secretName"},
		"hpa without a metric":         {[]string{"minimal"}, `worker: {autoscaling: {enabled: true, targetCPUUtilizationPercentage: ""}}`, "set targetCPUUtilizationPercentage"},
		"hpa min above max":            {[]string{"minimal"}, `worker: {autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 3}}`, "minReplicas is above maxReplicas"},
		"no temporal address":          {[]string{"minimal"}, `temporal: {address: ""}`, "temporal.address"},
		"temporal TLS secret, TLS off": {[]string{"minimal"}, `temporal: {tls: {existingSecret: tls}}`, "temporal.tls.enabled=true"},
		"client cert without key":      {[]string{"minimal"}, `temporal: {tls: {enabled: true, existingSecret: tls, keyKey: ""}}`, "temporal.tls.keyKey"},
		"bad server name (schema)":     {[]string{"minimal"}, `temporal: {tls: {enabled: true, serverName: "a b"}}`, "serverName"},
		"value removed":                {[]string{"minimal"}, `worker: {autoscaling: null}`, "autoscaling"},
		"misspelt value (schema)":      {[]string{"minimal"}, `worker: {replicas: 5}`, "replicas"},
		"wrong type (schema)":          {[]string{"minimal"}, `serve: {port: "8080"}`, "port"},
		"bad enum (schema)":            {[]string{"minimal"}, `serve: {cookieSecure: sometimes}`, "cookieSecure"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render(chartDir, values(t, tc.files, tc.override), rel)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestValidateCatches makes sure the checks above can fail: a broken object is refused.
func TestValidateCatches(t *testing.T) {
	out, err := Render(chartDir, values(t, []string{"minimal"}), rel)
	if err != nil {
		t.Fatal(err)
	}
	tpl := filepath.Join("herald", "templates", "worker-deployment.yaml")
	for name, tc := range map[string]struct{ from, to, want string }{
		"unknown field":   {"terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", "unknown field"},
		"bad quantity":    {"memory: 512Mi", "memory: 512 megs", "quantities must match"},
		"missing volume":  {"name: tmp\n          emptyDir", "name: scratch\n          emptyDir", "does not have"},
		"probe port name": {"port: metrics", "port: metric", "is not a port of the container"},
		"root allowed":    {"runAsNonRoot: true", "runAsNonRoot: false", "runAsNonRoot"},
	} {
		t.Run(name, func(t *testing.T) {
			broken := map[string]string{}
			for k, v := range out {
				broken[k] = v
			}
			if !strings.Contains(out[tpl], tc.from) {
				t.Fatalf("%q not in the rendered worker Deployment", tc.from)
			}
			broken[tpl] = strings.Replace(out[tpl], tc.from, tc.to, 1)
			objs, err := Decode(broken)
			if err == nil {
				err = Validate(objs)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestReadmeExample renders the values file the README shows for `helm install`.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n# my-values.yaml\n")
	example, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("README.md has no ```yaml block starting with # my-values.yaml")
	}
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(example), &vals); err != nil {
		t.Fatalf("the README's my-values.yaml: %v", err)
	}
	objs, _ := renderValid(t, vals)
	for _, k := range []string{"HorizontalPodAutoscaler/herald-worker", "Ingress/herald-serve", "Job/herald-namespace-setup"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("no %s in %v", k, keys(objs))
		}
	}
	if got, _ := env(container(t, objs, "herald-worker"), "HERALD_CODEC_KEY_FILE"); got != "/etc/herald/codec/codec.key" {
		t.Errorf("HERALD_CODEC_KEY_FILE=%q", got)
	}
}
