package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// ConfigurationName names the ValidatingWebhookConfiguration of the fence.
	ConfigurationName = "drover-fence"
	// WebhookName names its one webhook; the API server quotes it in every refusal.
	WebhookName = "pods.fence.drover.io"

	// fencedValue is the value of the namespace label while the namespace is fenced.
	fencedValue = "true"
	// timeoutSeconds bounds each call of the API server to the fence; the fence reads two
	// objects, so a slow answer means the agent is in trouble and the pod is refused.
	timeoutSeconds = 5
	// fieldOwner names the fence in the objects' managedFields.
	fieldOwner = "drover-agent-fence"
)

// Options say how the API server reaches the fence.
type Options struct {
	// URL of the fence (https://host:port/fence/pods): the lab's API server reaches the
	// agent on 127.0.0.1 directly. Exactly one of URL and Service.
	URL string
	// Service through which the API server reaches the agent in production; its path should
	// be Path.
	Service *admissionregistrationv1.ServiceReference
	// CABundle is the PEM CA that signed the serving certificate.
	CABundle []byte
	// NamespaceLabel selects the namespaces whose pods the fence sees (value "true");
	// default LabelFenced.
	NamespaceLabel string
}

// The fence's permissions, next to the code that needs them. Creating pods serves only the
// dry-run probe (RBAC cannot restrict a verb to dry runs); an agent that does not probe can drop it.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;create;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups=drover.io,resources=volumereplicationgroups,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods,verbs=create

// EnsureConfiguration creates or updates, by server-side apply, the ValidatingWebhookConfiguration
// drover-fence: pods CREATE, in namespaces labelled NamespaceLabel=true only, failing closed
// (failurePolicy Fail), without side effects. Applying the same options again changes nothing.
func EnsureConfiguration(ctx context.Context, c client.Client, opts Options) error {
	cfg, err := configuration(opts)
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, cfg, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply ValidatingWebhookConfiguration %s: %w", ConfigurationName, err)
	}
	return nil
}

func configuration(opts Options) (*admissionregistrationv1ac.ValidatingWebhookConfigurationApplyConfiguration, error) {
	if (opts.URL == "") == (opts.Service == nil) {
		return nil, errors.New("the fence's configuration needs exactly one of a URL and a Service")
	}
	if len(opts.CABundle) == 0 {
		return nil, errors.New("the fence's configuration needs the CA bundle of its serving certificate")
	}
	label := opts.NamespaceLabel
	if label == "" {
		label = LabelFenced
	}
	clientConfig := admissionregistrationv1ac.WebhookClientConfig().WithCABundle(opts.CABundle...)
	if opts.URL != "" {
		clientConfig.WithURL(opts.URL)
	} else {
		svc := admissionregistrationv1ac.ServiceReference().
			WithNamespace(opts.Service.Namespace).WithName(opts.Service.Name)
		if opts.Service.Path != nil {
			svc.WithPath(*opts.Service.Path)
		}
		if opts.Service.Port != nil {
			svc.WithPort(*opts.Service.Port)
		}
		clientConfig.WithService(svc)
	}
	rule := admissionregistrationv1ac.RuleWithOperations().
		WithOperations(admissionregistrationv1.Create).
		WithAPIGroups("").WithAPIVersions("v1").WithResources("pods").
		WithScope(admissionregistrationv1.NamespacedScope)
	hook := admissionregistrationv1ac.ValidatingWebhook().
		WithName(WebhookName).
		WithClientConfig(clientConfig).
		WithRules(rule).
		WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{label: fencedValue}).
			WithMatchExpressions(metav1ac.LabelSelectorRequirement().WithKey(corev1.LabelMetadataName).
				WithOperator(metav1.LabelSelectorOpNotIn).WithValues(NeverFenced...))).
		WithFailurePolicy(admissionregistrationv1.Fail).
		WithMatchPolicy(admissionregistrationv1.Equivalent).
		WithSideEffects(admissionregistrationv1.SideEffectClassNone).
		WithAdmissionReviewVersions("v1").
		WithTimeoutSeconds(timeoutSeconds)
	return admissionregistrationv1ac.ValidatingWebhookConfiguration(ConfigurationName).WithWebhooks(hook), nil
}

// SetNamespaceFence sets (fenced) or removes the label LabelFenced=true on a namespace, by a
// merge patch of that one label, and does nothing when the label is already so. It returns the
// namespace as the API server holds it then.
func SetNamespaceFence(ctx context.Context, c client.Client, namespace string, fenced bool) (ns *corev1.Namespace, changed bool, err error) {
	ns = &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, false, fmt.Errorf("failed to get namespace %s: %w", namespace, err)
	}
	if IsFenced(ns.Labels) == fenced {
		return ns, false, nil
	}
	base := ns.DeepCopy()
	if fenced {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[LabelFenced] = fencedValue
	} else {
		delete(ns.Labels, LabelFenced)
	}
	if err := c.Patch(ctx, ns, client.MergeFrom(base), client.FieldOwner(fieldOwner)); err != nil {
		return nil, false, fmt.Errorf("failed to patch namespace %s: %w", namespace, err)
	}
	return ns, true, nil
}

// IsFenced reports whether a namespace's labels fence it.
func IsFenced(labels map[string]string) bool { return labels[LabelFenced] == fencedValue }

// probeImage is the image of the probe pod; a dry run pulls nothing.
const probeImage = "drover.io/fence-probe"

// ProbeFence proves that the API server enforces the fence on a PVC: it creates, in dry-run, a
// pod that mounts it, and reports true when the fence refuses that pod. The agent calls it after
// fencing and before its last consumer check: the API server learns of the namespace label and
// the configuration through its own informers, so until a probe is refused a pod could still be
// admitted. True means the fence refuses such a pod (also when it refuses because it cannot read
// the fences: it fails closed). False with a nil error means the pod would be admitted; any other
// refusal (another admission check, the fence unreachable) is an error.
func ProbeFence(ctx context.Context, c client.Client, namespace, pvc string) (bool, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "drover-fence-probe-"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "probe", Image: probeImage}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc},
			}}},
		},
	}
	err := c.Create(ctx, pod, client.DryRunAll)
	switch {
	case err == nil:
		return false, nil
	case IsFenceDenial(err):
		return true, nil
	}
	return false, fmt.Errorf("failed to probe the fence of PVC %s/%s with a dry-run pod: %w", namespace, pvc, err)
}

// IsFenceDenial tells whether the API server refused a request because the fence answered no,
// for a fenced PVC or because it could not tell; not when the API server could not reach it.
func IsFenceDenial(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return strings.Contains(status.Status().Message, fmt.Sprintf("admission webhook %q denied the request", WebhookName))
}
