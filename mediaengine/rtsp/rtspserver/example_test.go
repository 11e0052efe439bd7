package rtspserver_test

import (
	"context"
	"log"

	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
)

// Serving: publishers push with ANNOUNCE/RECORD, players pull with
// DESCRIBE/SETUP/PLAY; the Handler decides and connects them to streams.
func ExampleServer() {
	users := map[string]string{"cam-17": "from the control plane"}
	srv, err := rtspserver.New(rtspserver.Config{
		Addr:        ":8554",
		UDPRTPAddr:  ":8000",
		Credentials: func(u string) (string, bool) { p, ok := users[u]; return p, ok },
	}, rtsptest.NewRelay())
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	for _, s := range srv.Sessions() {
		log.Printf("%s %s publishing=%v", s.ID, s.Path, s.Publishing)
	}
}
