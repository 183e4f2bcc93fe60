// Package drpolicy reconciles DRPolicies on the hub: a policy is Validated when both its
// DRClusters exist and are Validated and it defines the S3 profile each of them names.
package drpolicy
