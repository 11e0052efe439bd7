package httpapi_test

import "github.com/svcplatform/svc/controlplane/channels"

var systemActor = channels.Actor{Type: "system", ID: "stream-dispatcher"}

func channelID(s string) channels.ChannelID { return channels.ChannelID(s) }

func commandID(s string) channels.CommandID { return channels.CommandID(s) }
