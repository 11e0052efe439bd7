package hosttuning

import (
	"errors"
	"testing"
)

func TestPlan(t *testing.T) {
	cur := map[string]string{"net.core.somaxconn": "4096", "net.ipv4.ip_local_port_range": "32768 60999"}
	items, changes, err := Plan(map[string]string{
		"net.core.somaxconn":           "4096",
		"net.ipv4.ip_local_port_range": " 10000\t65000 ",
		"net.ipv4.tcp_fin_timeout":     "1",
	}, func(k string) string { return cur[k] })
	if err != nil || changes != 1 || len(items) != 3 {
		t.Fatalf("%v %d %+v", err, changes, items)
	}
	byKey := map[string]Item{}
	for _, it := range items {
		byKey[it.Key] = it
	}
	if it := byKey["net.ipv4.ip_local_port_range"]; !it.Changed || it.DesiredValue != "10000 65000" || !it.Valid {
		t.Fatalf("port range %+v", it)
	}
	if it := byKey["net.ipv4.tcp_fin_timeout"]; it.Valid || FirstInvalid(items) == nil {
		t.Fatalf("fin timeout 1 accepted: %+v", it)
	}
	if _, _, err := Plan(map[string]string{"kernel.panic": "1"}, nil); !errors.Is(err, ErrNotWhitelisted) {
		t.Fatal(err)
	}
	if _, _, err := Plan(nil, nil); !errors.Is(err, ErrNoValues) {
		t.Fatal(err)
	}
}

// FuzzPlan: values from the API never panic the planner, and a value it
// calls valid passes the parameter's own check.
func FuzzPlan(f *testing.F) {
	f.Add("net.core.somaxconn", "65535")
	f.Add("net.ipv4.ip_local_port_range", "1024 2048")
	f.Add("net.ipv4.ip_local_port_range", "99999999999999999999 1")
	f.Add("fs.file-max", "-1")
	f.Fuzz(func(t *testing.T, key, value string) {
		items, _, err := Plan(map[string]string{key: value}, func(string) string { return "" })
		if err != nil {
			if Find(key) != nil {
				t.Fatalf("whitelisted key refused: %v", err)
			}
			return
		}
		if items[0].Valid && Find(key).Validate(items[0].DesiredValue) != nil {
			t.Fatal("invalid value planned as valid")
		}
	})
}
