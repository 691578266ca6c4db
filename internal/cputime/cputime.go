// Package cputime reads CPU time for benchmarks. On a shared machine wall
// time measures the neighbours too; CPU time is a process's (or a
// thread's) own work.
package cputime
