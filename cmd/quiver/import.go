package main

func importCmd() *command { return &command{summary: "x", usage: "import", run: nil} }
