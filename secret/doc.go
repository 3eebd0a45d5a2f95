// Package secret knows what a secret looks like: the token, cloud key and
// private key shapes that the issue queue scrubs from what it posts, and
// .env-style assignments of secret-looking values. It scans the lines a
// landing adds (Scan, Added) so a user's secret is never merged onto the
// base branch. It reports where a secret is, never its value.
package secret
