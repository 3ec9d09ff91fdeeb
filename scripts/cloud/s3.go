package main

import (
	"net"
	"net/http"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// s3Server is the S3 stand-in: gofakes3 in memory on a loopback port.
type s3Server struct {
	URL string
	srv *http.Server
}

func startS3() (*s3Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &s3Server{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: gofakes3.New(s3mem.New()).Server()}}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *s3Server) Close() { s.srv.Close() }
