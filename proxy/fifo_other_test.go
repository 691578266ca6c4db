//go:build !unix

package proxy

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are a unix thing") }
