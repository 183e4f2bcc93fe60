package lab

import (
	"context"
	"fmt"
)

const componentS3 = "s3"

// s3Step is a managed cluster's S3 server with the credentials of the start's S3 profile, ready
// once it answers and holds the profile's bucket.
func (c *Cluster) s3Step(sc *startContext) step {
	comp := c.s3Component()
	if sc != nil {
		comp.env = sc.s3.env()
	}
	return step{
		component: comp,
		ready: func(ctx context.Context, sc *startContext, comp component, pid int) error {
			if err := c.waitReady(ctx, comp, pid, sc.s3.s3Ready); err != nil {
				return err
			}
			return sc.s3.ensureBucket(ctx)
		},
	}
}

// s3Component is the cluster's S3 server. Credentials go in the environment, not on the command
// line, which every user of the machine can read in /proc.
func (c *Cluster) s3Component() component {
	return component{name: componentS3, binary: c.bin("versitygw"), args: []string{
		fmt.Sprintf("--port=127.0.0.1:%d", c.Ports.S3),
		"--region=" + S3Region,
		// Without it every request is logged to stdout, growing the log without bound.
		"--quiet",
		// With an IAM store (holding no account but root) an unknown access key is refused as AWS
		// refuses it, 403 InvalidAccessKeyId. Without one, versitygw answers 404
		// XAdminUserNotFound, which a client checking only the status could take for a missing
		// object.
		"--iam-dir=" + c.s3IAMDir(),
		"posix",
		c.s3DataDir(),
	}}
}
