package credprovider

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// token is the password every plugin of this test returns.
const token = "tok-3f9a1c7e-SECRET-do-not-print"

// TestTokenNeverShown: the password a plugin returns is in no error, no log
// line (at debug level) and no String/GoString/%v of what the package
// returns, whatever the plugin does; it is only in Authorization().
func TestTokenNeverShown(t *testing.T) {
	modes := []string{"ok", "fail", "garbage", "wrongapi", "wrongkind", "unknownfield", "fail-after-response", "sleep"}
	var log bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var shown []string
	var authorized bool
	for _, mode := range modes {
		for _, keyType := range []string{"Registry", "Bogus"} {
			r := newRig(t, plugin{name: "p-" + mode, match: []string{"reg.io"}, env: map[string]string{
				"PLUGIN_MODE": mode, "PLUGIN_PASSWORD": token, "PLUGIN_USERNAME": "user-" + mode,
				"PLUGIN_CACHE_KEY_TYPE": keyType, "PLUGIN_SLEEP": "5s"}})
			ps := r.load(WithLogger(logger), WithTimeout(200*time.Millisecond))
			shown = append(shown, ps.String(), fmt.Sprintf("%v %+v", ps, ps))
			creds, err := ps.Lookup(context.Background(), "reg.io/app")
			if err != nil {
				shown = append(shown, err.Error(), fmt.Sprintf("%v %+v %#v", err, err, err))
			}
			for _, c := range creds {
				shown = append(shown, c.String(), c.GoString(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%v %+v %#v", *c, *c, *c), fmt.Sprint(creds))
				logger.Info("credential", "cred", c, "creds", creds)
				if cfg, err := c.Authorization(); err == nil && cfg.Password == token {
					authorized = true
				}
			}
		}
	}
	if !authorized {
		t.Fatal("no lookup returned the token at all: the test proves nothing")
	}
	shown = append(shown, log.String())
	for _, s := range shown {
		if strings.Contains(s, token) {
			t.Errorf("the token is shown in:\n%s", s)
		}
	}
	if !strings.Contains(log.String(), "credential provider failed") || !strings.Contains(log.String(), "user-ok") {
		t.Errorf("the log lacks the failures or the credential's username:\n%s", log.String())
	}
}
