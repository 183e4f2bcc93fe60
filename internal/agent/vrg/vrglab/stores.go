package vrglab

import (
	"github.com/onsi/gomega"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// S3Profiles returns the VRG's view of every lab S3 profile and a store for each, to read
// what the agent wrote: sealed under the profile's store keys, as the agent's.
func S3Profiles(g gomega.Gomega) ([]v1alpha1.S3Profile, []objectstore.Store) {
	profiles, raw := RawStores(g)
	keys := StoreKeys(g)
	stores := make([]objectstore.Store, len(raw))
	for i, s := range raw {
		stores[i] = objectstore.Sealed(s, keys[i])
	}
	return profiles, stores
}

// StoreKeys are the store keys of every lab S3 profile, in cluster order.
func StoreKeys(g gomega.Gomega) []objectstore.Keyring {
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var keys []objectstore.Keyring
	for _, p := range profiles {
		keys = append(keys, p.StoreKeys)
	}
	return keys
}

// RawStores returns the VRG's view of every lab S3 profile and a store for each that gives
// the bytes its server holds, as a holder of the bucket's credentials sees them.
func RawStores(g gomega.Gomega) ([]v1alpha1.S3Profile, []objectstore.Store) {
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(profiles).To(gomega.HaveLen(2))
	var specs []v1alpha1.S3Profile
	var stores []objectstore.Store
	for _, p := range profiles {
		specs = append(specs, v1alpha1.S3Profile{
			Name: p.Name, Endpoint: p.Endpoint, Insecure: p.Insecure, Bucket: p.Bucket, Region: p.Region,
			SecretRef: v1alpha1.SecretRef{Namespace: lab.S3SecretNamespace, Name: p.Name},
		})
		store, err := objectstore.NewS3(objectstore.Profile{
			Name: p.Name, Endpoint: p.Endpoint, Insecure: p.Insecure, Bucket: p.Bucket, Region: p.Region,
			AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey,
		})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		stores = append(stores, store)
	}
	return specs, stores
}
