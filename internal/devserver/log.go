package devserver

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts the Temporal server's logger interface to log/slog,
// dropping records below min. Panic and Fatal are logged as errors and never
// stop the process: the server is a guest in ours.
//
// It deliberately does not expose the underlying *slog.Logger (the server's
// SLogWrapper hook), so every record goes through the level filter.
type serverLogger struct {
	out   *slog.Logger
	min   slog.Leveler
	quiet *atomic.Bool // when set, only errors pass: the server warns a lot while it stops
	// with are the tags of With, turned into attributes only when a record passes: the
	// server calls With on every request, and drops nearly all of its records.
	with []tag.Tag
}

var (
	_ log.Logger     = serverLogger{}
	_ log.WithLogger = serverLogger{}
)

func (l serverLogger) Debug(msg string, tags ...tag.Tag)  { l.log(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)   { l.log(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)   { l.log(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.log(slog.LevelError, msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag)  { l.log(slog.LevelError, msg, tags) }

// With returns a logger that adds tags to every record.
func (l serverLogger) With(tags ...tag.Tag) log.Logger {
	with := make([]tag.Tag, 0, len(l.with)+len(tags))
	with = append(append(with, l.with...), tags...)
	return serverLogger{out: l.out, min: l.min, quiet: l.quiet, with: with}
}

func (l serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if level < l.min.Level() || (level < slog.LevelError && l.quiet.Load()) || !l.out.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, len(l.with)+len(tags))
	attrs = appendTags(attrs, l.with)
	l.out.LogAttrs(ctx, level, msg, appendTags(attrs, tags)...)
}

func appendTags(attrs []slog.Attr, tags []tag.Tag) []slog.Attr {
	for _, t := range tags {
		attrs = append(attrs, slog.Any(t.Key(), t.Value()))
	}
	return attrs
}
