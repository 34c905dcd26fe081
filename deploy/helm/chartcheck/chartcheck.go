// Package chartcheck renders Herald's Helm chart (deploy/helm/herald) with Helm's own Go
// packages and validates what comes out against the Kubernetes API types, without a cluster.
//
// Render runs Helm's template engine as `helm install` would (strict: a missing value is an
// error); Lint runs `helm lint`'s rules; Validate decodes every rendered object strictly into
// its k8s.io/api type (an unknown or misspelt field, a wrong type or a bad quantity is an
// error, and so is a kind the package does not know) and checks the references between
// objects that the API server would not: selectors, named ports, volumes, the HPA's target,
// the Ingress's backends.
//
// It is a module of its own so that Helm's dependencies stay out of Herald's go.mod; CI runs
// `go test ./...` in this directory (.ci/run).
package chartcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one rendered manifest: the template it came from and its decoded object.
type Object struct {
	// Template is the chart file that rendered it, e.g. herald/templates/worker-deployment.yaml.
	Template string
	// Kind and Name identify it.
	Kind, Name string
	// Value is a pointer to the k8s.io/api type of Kind (e.g. *appsv1.Deployment).
	Value any
}

// Release names the release and namespace a render is done for.
type Release struct {
	Name, Namespace string
}

// LoadValues reads and merges values files in order, later files winning (like repeated -f).
func LoadValues(files ...string) (map[string]any, error) {
	merged := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return nil, fmt.Errorf("values %s: %w", f, err)
		}
		merged = chartutil.MergeTables(v.AsMap(), merged)
	}
	return merged, nil
}

// Render renders the chart in dir with vals (over the chart's values.yaml) for an install of
// rel, and returns the manifests by template name; NOTES.txt is returned too.
func Render(dir string, vals map[string]any, rel Release) (map[string]string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out, err := engine.Engine{Strict: true}.Render(ch, top)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Lint runs `helm lint`'s rules on the chart in dir with vals and returns the messages at
// warning level or above.
func Lint(dir string, vals map[string]any, namespace string) []support.Message {
	var bad []support.Message
	for _, m := range lint.All(dir, vals, namespace, false).Messages {
		if m.Severity >= support.WarningSev {
			bad = append(bad, m)
		}
	}
	return bad
}

// newObject returns a new value of the k8s.io/api type for apiVersion and kind, or nil for a
// kind the chart is not expected to render.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "networking.k8s.io/v1 Ingress":
		return &networkingv1.Ingress{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	}
	return nil
}

// Decode splits the rendered templates into objects, decoding each strictly into its type.
func Decode(rendered map[string]string) ([]Object, error) {
	names := make([]string, 0, len(rendered))
	for n := range rendered {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []Object
	var errs []error
	for _, tpl := range names {
		if strings.HasSuffix(tpl, "NOTES.txt") {
			continue
		}
		r := yamlutil.NewYAMLReader(bufioReader(rendered[tpl]))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", tpl, err))
				break
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				errs = append(errs, fmt.Errorf("%s: not YAML: %w", tpl, err))
				continue
			}
			v := newObject(head.APIVersion, head.Kind)
			if v == nil {
				errs = append(errs, fmt.Errorf("%s: %s %q: apiVersion/kind not known to the check (add it to newObject)", tpl, head.APIVersion, head.Kind))
				continue
			}
			if err := yaml.UnmarshalStrict(doc, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s %s: %w", tpl, head.Kind, head.Metadata.Name, err))
				continue
			}
			objs = append(objs, Object{Template: tpl, Kind: head.Kind, Name: head.Metadata.Name, Value: v})
		}
	}
	return objs, errors.Join(errs...)
}

// stripComments drops comment-only lines, so that a template rendering only comments counts
// as empty.
func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// bufioReader reads s for a YAML document reader.
func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
