package chartcheck

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks decoded objects for what strict decoding cannot see: names and labels
// the API server would refuse, a Deployment whose selector does not select its pods, a
// container mounting a volume the pod lacks or probing a port it does not name, a Service
// that selects no rendered pod or targets a port they do not name, an HPA or Ingress pointing
// at a Deployment or Service that is not rendered, and a container that may run as root or
// write its root filesystem (the chart's promise).
func Validate(objs []Object) error {
	var errs []error
	bad := func(o Object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %s (%s): %s", o.Kind, o.Name, o.Template, fmt.Sprintf(format, args...)))
	}
	deployments := map[string]*appsv1.Deployment{}
	services := map[string]*corev1.Service{}
	seen := map[string]bool{}
	for _, o := range objs {
		key := o.Kind + "/" + o.Name
		if seen[key] {
			bad(o, "rendered twice")
		}
		seen[key] = true
		meta := objectMeta(o.Value)
		for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
			bad(o, "name: %s", msg)
		}
		checkLabels(meta.Labels, func(msg string) { bad(o, "label %s", msg) })
		switch v := o.Value.(type) {
		case *appsv1.Deployment:
			deployments[v.Name] = v
			sel, err := metav1.LabelSelectorAsSelector(v.Spec.Selector)
			if err != nil || sel.Empty() {
				bad(o, "selector %v: %v", v.Spec.Selector, err)
			} else if !sel.Matches(labels.Set(v.Spec.Template.Labels)) {
				bad(o, "selector %s does not select the pod template's labels %v", sel, v.Spec.Template.Labels)
			}
			checkLabels(v.Spec.Template.Labels, func(msg string) { bad(o, "pod label %s", msg) })
			checkPod(&v.Spec.Template.Spec, true, func(msg string) { bad(o, "%s", msg) })
		case *batchv1.Job:
			if p := v.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
				bad(o, "restartPolicy %q: a Job's pods need Never or OnFailure", p)
			}
			checkPod(&v.Spec.Template.Spec, false, func(msg string) { bad(o, "%s", msg) })
		case *corev1.Service:
			for _, msg := range validation.IsDNS1035Label(v.Name) {
				bad(o, "service name: %s", msg)
			}
			services[v.Name] = v
		}
	}
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *corev1.Service:
			d := selected(deployments, v.Spec.Selector)
			if d == nil {
				bad(o, "selector %v selects no rendered Deployment's pods", v.Spec.Selector)
				continue
			}
			for _, p := range v.Spec.Ports {
				if !podHasPort(&d.Spec.Template.Spec, p.TargetPort) {
					bad(o, "port %s: targetPort %s is not a port of %s's containers", p.Name, p.TargetPort.String(), d.Name)
				}
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			t := v.Spec.ScaleTargetRef
			if t.Kind != "Deployment" || t.APIVersion != "apps/v1" || deployments[t.Name] == nil {
				bad(o, "scaleTargetRef %s %s %s is not a rendered Deployment", t.APIVersion, t.Kind, t.Name)
			} else if deployments[t.Name].Spec.Replicas != nil {
				bad(o, "Deployment %s sets replicas although the HPA scales it (each upgrade would reset them)", t.Name)
			}
			if v.Spec.MinReplicas == nil || *v.Spec.MinReplicas < 1 || *v.Spec.MinReplicas > v.Spec.MaxReplicas {
				bad(o, "replicas: min %v, max %d", v.Spec.MinReplicas, v.Spec.MaxReplicas)
			}
			if len(v.Spec.Metrics) == 0 {
				bad(o, "no metrics")
			}
		case *networkingv1.Ingress:
			for _, r := range v.Spec.Rules {
				for _, msg := range validation.IsDNS1123Subdomain(r.Host) {
					bad(o, "host %q: %s", r.Host, msg)
				}
				if r.HTTP == nil {
					continue
				}
				for _, p := range r.HTTP.Paths {
					s := p.Backend.Service
					if s == nil || services[s.Name] == nil {
						bad(o, "path %s: backend is not a rendered Service", p.Path)
						continue
					}
					if !serviceHasPort(services[s.Name], s.Port) {
						bad(o, "path %s: Service %s has no port %v", p.Path, s.Name, s.Port)
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// objectMeta returns the metadata of a decoded object.
func objectMeta(v any) *metav1.ObjectMeta {
	return v.(interface{ GetObjectMeta() metav1.Object }).GetObjectMeta().(*metav1.ObjectMeta)
}

// checkLabels reports every label key or value the API server would refuse.
func checkLabels(l map[string]string, bad func(string)) {
	for k, v := range l {
		for _, msg := range validation.IsQualifiedName(k) {
			bad(fmt.Sprintf("key %q: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			bad(fmt.Sprintf("%s=%q: %s", k, v, msg))
		}
	}
}

// checkPod checks a pod's containers against its volumes and the chart's security promise;
// those of a long-running pod must have liveness and readiness probes.
func checkPod(p *corev1.PodSpec, longRunning bool, bad func(string)) {
	volumes := map[string]bool{}
	for _, v := range p.Volumes {
		if volumes[v.Name] {
			bad("volume " + v.Name + " twice")
		}
		volumes[v.Name] = true
	}
	if p.SecurityContext == nil || p.SecurityContext.RunAsNonRoot == nil || !*p.SecurityContext.RunAsNonRoot {
		bad("pod securityContext.runAsNonRoot is not true")
	}
	if len(p.Containers) == 0 {
		bad("no containers")
	}
	for _, c := range p.Containers {
		where := "container " + c.Name + ": "
		if c.Image == "" {
			bad(where + "no image")
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad(where + "securityContext must set readOnlyRootFilesystem and forbid privilege escalation")
		}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				bad(where + "mounts volume " + m.Name + ", which the pod does not have")
			}
		}
		names := map[string]bool{}
		for _, port := range c.Ports {
			if port.Name == "" {
				continue
			}
			for _, msg := range validation.IsValidPortName(port.Name) {
				bad(where + "port " + port.Name + ": " + msg)
			}
			names[port.Name] = true
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				bad(where + "env " + e.Name + ": " + msg)
			}
			if env[e.Name] {
				bad(where + "env " + e.Name + " set twice")
			}
			env[e.Name] = true
		}
		for what, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if pr == nil {
				if longRunning {
					bad(where + "no " + what + " probe")
				}
				continue
			}
			if pr.HTTPGet != nil && pr.HTTPGet.Port.Type == intstr.String && !names[pr.HTTPGet.Port.StrVal] {
				bad(where + what + " probe port " + pr.HTTPGet.Port.StrVal + " is not a port of the container")
			}
		}
	}
	for _, c := range p.InitContainers {
		bad("init container " + c.Name + ": not expected (the image has no shell)")
	}
}

// selected returns the Deployment whose pods sel selects, if any.
func selected(deployments map[string]*appsv1.Deployment, sel map[string]string) *appsv1.Deployment {
	if len(sel) == 0 {
		return nil
	}
	for _, d := range deployments {
		if labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
			return d
		}
	}
	return nil
}

// podHasPort reports whether a container of p exposes the (named or numbered) port.
func podHasPort(p *corev1.PodSpec, port intstr.IntOrString) bool {
	for _, c := range p.Containers {
		for _, cp := range c.Ports {
			if (port.Type == intstr.String && cp.Name == port.StrVal) || (port.Type == intstr.Int && cp.ContainerPort == port.IntVal) {
				return true
			}
		}
	}
	return false
}

// serviceHasPort reports whether s has the Ingress backend's port.
func serviceHasPort(s *corev1.Service, port networkingv1.ServiceBackendPort) bool {
	for _, p := range s.Spec.Ports {
		if (port.Name != "" && p.Name == port.Name) || (port.Name == "" && p.Port == port.Number) {
			return true
		}
	}
	return false
}
