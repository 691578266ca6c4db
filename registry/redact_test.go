package registry

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	secrets := []Secret{{Var: "GITHUB_TOKEN", Value: "s3cr3t-value"}}
	for _, tc := range []struct{ name, in, want string }{
		{"known_secret", "token=s3cr3t-value!", "token=[redacted:GITHUB_TOKEN]!"},
		{"github_classic", "ghp_" + strings.Repeat("a", 36), "[redacted:github-token]"},
		{"aws_key", "key AKIAABCDEFGHIJKLMNOP end", "key [redacted:aws-access-key] end"},
		{"slack", "xoxb-1234567890-abcdef", "[redacted:slack-token]"},
		{"anthropic_before_openai", "sk-ant-api03-" + strings.Repeat("x", 30), "[redacted:anthropic-key]"},
		{"openai", "sk-proj-" + strings.Repeat("y", 30), "[redacted:openai-key]"},
		{"bearer", "Authorization: Bearer abcdefghijklmnop1234", "Authorization: [redacted:bearer-token]"},
		{"private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[redacted:private-key]"},
		{"plain_text_untouched", "nothing secret here: sk-short", "nothing secret here: sk-short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Redact(tc.in, secrets); got != tc.want {
				t.Fatalf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
