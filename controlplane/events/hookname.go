package events

import (
	"fmt"
	"regexp"
	"strings"
)

var hookNameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// NormalizeHookName turns an engine hook name into the HookName of the
// event catalog: legacy snake_case names such as on_stream_changed become
// OnStreamChanged, and names already in that form are kept. The engine and
// old plans use the snake_case form, the catalog the other; normalising
// both at the edge lets one plan match hooks from either.
func NormalizeHookName(name string) (string, error) {
	if !hookNameRe.MatchString(name) {
		return "", fmt.Errorf("%w: hook name %q must be 1-64 letters, digits or underscores, starting with a letter", ErrInvalid, name)
	}
	if !strings.Contains(name, "_") && name[0] >= 'A' && name[0] <= 'Z' {
		return name, nil
	}
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: hook name %q has no letters", ErrInvalid, name)
	}
	return b.String(), nil
}

// NormalizeEventName rewrites legacy engine hook event names
// (engine.webhook.on_play) to the catalog form (engine.webhook.OnPlay);
// every other name, wildcards included, is returned unchanged.
func NormalizeEventName(name string) (string, error) {
	hook, ok := strings.CutPrefix(name, EngineWebhookPrefix)
	if !ok || hook == "*" {
		return name, nil
	}
	n, err := NormalizeHookName(hook)
	if err != nil {
		return "", err
	}
	return EngineWebhookPrefix + n, nil
}
