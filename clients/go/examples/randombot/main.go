// Command randombot is a capicua bot that plays a random legal action. Every kind of
// decision (a tile on an end, DEFER, REDEAL or KEEP) is one of the request's legal actions,
// so picking a random id among them plays them all. Build it and run it against a server:
//
//	clients/go/go-offline.sh build -o randombot capicua.dev/go/examples/randombot
//	CAPICUA_SERVER=127.0.0.1:50051 CAPICUA_TOKEN=<bot token> ./randombot [-matches N]
//
// With -ladder ladders/ID -version LABEL [-max-matches-at-once N] it first joins that ladder
// of the server (JoinLadder, with the bot token); the ladder's matches then come on its Play
// stream like any other match. A refused join is one line and exit 2.
//
// It plays every seat its token holds, in any number of matches at once, on one Play stream.
// How the stream ends says what comes next (the lifecycle table in docs/protocol.md, "How a
// Play stream ends"): OK stops (exit 0: a seat token whose match ended); ABORTED (another
// process took over the token), UNAUTHENTICATED, PERMISSION_DENIED, FAILED_PRECONDITION,
// INVALID_ARGUMENT and UNIMPLEMENTED stop (exit 2, but exit 0 for MATCH_FINISHED: a spent
// seat token); anything else is reconnected to with backoff. SIGINT, SIGTERM and -matches N
// (N matches ended) close the stream cleanly: exit 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails" // registers ErrorInfo for Details()
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "capicua.dev/go/capicuav1"
)

const (
	clientName     = "capicua-go-randombot/0.1.0"
	firstBackoff   = 100 * time.Millisecond // doubled after each failed attempt...
	maxBackoff     = 10 * time.Second       // ...up to this, ±20% jitter; reset by Welcome
	connectTimeout = 30 * time.Second       // no Welcome ever within this: a wrong address
	closeGrace     = 2 * time.Second        // after a half-close, the server's time to end
)

// Stream endings that no reconnect can fix (OK and MATCH_FINISHED are handled apart).
var stopCodes = map[codes.Code]string{
	codes.Unauthenticated:    "check the token",
	codes.PermissionDenied:   "check the token",
	codes.Aborted:            "another client holds the token now (is the bot running twice?)",
	codes.FailedPrecondition: "the token cannot play",
	codes.InvalidArgument:    "the server refused what this client sent",
	codes.Unimplemented:      "is it a capicua server?",
}

var logger = log.New(os.Stderr, "randombot: ", log.Ltime)

type bot struct {
	client    pb.PlayServiceClient
	server    string
	token     string
	tokenFrom string // where the token came from: "-token", "$CAPICUA_TOKEN", ...
	askForced bool
	max       int // stop after this many matches ended (0: never)
	rng       *rand.Rand

	stop     chan struct{} // closed by SIGINT/SIGTERM or -matches: close the stream, exit 0
	stopOnce sync.Once

	// Per match: which requests are void. A match has one open request at a time, so a
	// request is over once it is withdrawn, a later request of its match arrives (a higher
	// turn_id), or the match ends. The sets are kept across reconnects.
	latest    map[string]uint64 // the highest turn_id requested
	withdrawn map[string]uint64 // the highest turn_id withdrawn
	ended     map[string]bool   // MatchEnded arrived
}

// ending: how one stream ended.
type ending struct {
	err      error // the call's final status (io.EOF: OK)
	welcomed bool  // the stream got its Welcome
	stopping bool  // ServerStopping came first
	replaced bool  // an in-stream STREAM_REPLACED error (a server from before it was a status)
}

func main() {
	matches := flag.Int("matches", 0, "stop after N matches ended (0: play until stopped)")
	server := flag.String("server", "", "host:port (default $CAPICUA_SERVER, else 127.0.0.1:50051)")
	token := flag.String("token", "", "bot or seat token (default $CAPICUA_TOKEN, $CAPICUA_BOT_TOKEN, $CAPICUA_SEAT_TOKEN)")
	askForced := flag.Bool("ask-forced", false, "be asked even when one action is legal")
	ladder := flag.String("ladder", "", "join this ladder (ladders/ID) before playing, as -version")
	version := flag.String("version", "", "the version label the bot joins -ladder as: 1-32 of [A-Za-z0-9_.-]")
	atOnce := flag.Int("max-matches-at-once", 1, "matches of -ladder the bot plays at once (1-32)")
	flag.Parse()
	if *matches < 0 {
		logger.Fatalf("-matches needs N >= 0, got %d", *matches)
	}
	if (*ladder == "") != (*version == "") {
		logger.Print("-ladder and -version go together (e.g. -ladder ladders/club -version v1)")
		os.Exit(2)
	}
	if *atOnce < math.MinInt32 || *atOnce > math.MaxInt32 { // the field is an int32
		logger.Printf("-max-matches-at-once: %d is not between 1 and 32", *atOnce)
		os.Exit(2)
	}
	b := &bot{
		server:    first(*server, os.Getenv("CAPICUA_SERVER"), "127.0.0.1:50051"),
		askForced: *askForced,
		max:       *matches,
		rng:       rand.New(rand.NewSource(time.Now().UnixNano())),
		stop:      make(chan struct{}),
		latest:    map[string]uint64{},
		withdrawn: map[string]uint64{},
		ended:     map[string]bool{},
	}
	// The arena sets CAPICUA_TOKEN; people set CAPICUA_BOT_TOKEN or CAPICUA_SEAT_TOKEN.
	b.token, b.tokenFrom = *token, "-token"
	for _, name := range []string{"CAPICUA_TOKEN", "CAPICUA_BOT_TOKEN", "CAPICUA_SEAT_TOKEN"} {
		if b.token == "" {
			b.token, b.tokenFrom = os.Getenv(name), "$"+name
		}
	}
	if b.token == "" {
		logger.Print("no token: set CAPICUA_TOKEN (a bot token from `capicua match register-bot NAME`)")
		os.Exit(2)
	}
	// Keepalive as docs/protocol.md asks (pings at most every 20 s), replies up to 64 MiB,
	// and the channel's own reconnects on the same backoff as the streams'.
	conn, err := grpc.Dial(b.server,
		grpc.WithInsecure(), // plaintext: loopback or a trusted network (docs/tls.md)
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: 20 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: firstBackoff, Multiplier: 2, Jitter: 0.2, MaxDelay: maxBackoff}}),
	)
	if err != nil {
		logger.Fatalf("%s: %v", b.server, err)
	}
	b.client = pb.NewPlayServiceClient(conn)
	if *ladder != "" {
		if err := b.joinLadder(conn, *ladder, *version, *atOnce); err != nil {
			logger.Printf("stopping: JoinLadder %s: %s", *ladder, describe(status.Convert(err)))
			conn.Close()
			os.Exit(2)
		}
	}

	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		b.halt(fmt.Sprintf("%v: closing the stream", <-signals))
		logger.Printf("%v again: exiting now", <-signals)
		os.Exit(130)
	}()
	code := b.run()
	conn.Close() // os.Exit runs no deferred calls
	os.Exit(code)
}

// joinLadder joins ladder as version with the bot token before the Play stream opens, so
// that the ladder's matches come on it. It waits for the server as the stream would, up to
// connectTimeout.
func (b *bot) joinLadder(conn *grpc.ClientConn, ladder, version string, atOnce int) error {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+b.token)
	joined, err := pb.NewLadderServiceClient(conn).JoinLadder(ctx, &pb.JoinLadderRequest{
		Ladder: ladder, Version: version, MaxConcurrentMatches: int32(atOnce)}, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	entry := joined.GetEntry()
	logger.Printf("joined %s as %s (%d matches at once)", ladder,
		strings.TrimPrefix(entry.GetName(), ladder+"/entries/"), entry.GetMaxConcurrentMatches())
	return nil
}

// first returns the first non-empty value.
func first(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// halt asks the bot to stop: the stream is half-closed, the server ends it OK.
func (b *bot) halt(why string) {
	b.stopOnce.Do(func() {
		logger.Print(why)
		close(b.stop)
	})
}

func (b *bot) halted() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

// run plays stream after stream until one ending says stop; returns the exit code.
func (b *bot) run() int {
	start := time.Now()
	everWelcomed := false
	failures := 0
	why := "" // how the last stream ended
	for {
		var deadline time.Time // before the first Welcome ever: give up at start+30 s
		if !everWelcomed {
			deadline = start.Add(connectTimeout)
		}
		e := b.session(deadline)
		if e.welcomed {
			everWelcomed, failures = true, 0
		}
		st := status.Convert(e.err)
		if e.err == io.EOF {
			st = status.New(codes.OK, "")
		}
		switch reason := reasonOf(st); {
		case b.halted():
			logger.Printf("stopped after %d match(es)", len(b.ended))
			return 0
		case e.replaced:
			logger.Print("stopping: the stream was replaced; " + stopCodes[codes.Aborted])
			return 2
		case st.Code() == codes.OK && !e.stopping: // a seat token's match ended (row 2)
			logger.Printf("the server ended the stream after %d match(es): stopping", len(b.ended))
			return 0
		case reason == pb.ErrorReason_MATCH_FINISHED.String(): // a spent seat token (row 10)
			logger.Printf("the seat token is spent: %s", st.Message())
			return 0
		case stopCodes[st.Code()] != "": // never reconnect: the same answer would come
			logger.Printf("stopping: %s (%s, token from %s); %s",
				describe(st), b.server, b.tokenFrom, stopCodes[st.Code()])
			return 2
		}
		if st.Code() != codes.Canceled || why == "" { // Canceled: our own give-up timer
			why = describe(st)
		}
		// Anything else (UNAVAILABLE, SHUTTING_DOWN, SLOW_CONSUMER, INTERNAL, a drop; OK
		// after ServerStopping from an older server): reconnect after 0.1 s, 0.2 s, ... 10 s.
		failures++
		delay := firstBackoff
		for i := 1; i < failures && delay < maxBackoff; i++ {
			delay *= 2
		}
		if delay > maxBackoff {
			delay = maxBackoff
		}
		delay = time.Duration(float64(delay) * (0.8 + 0.4*b.rng.Float64()))
		if left := connectTimeout - time.Since(start); !everWelcomed && left <= 0 {
			logger.Printf("no capicua server answered at %s within %v (%s): giving up",
				b.server, connectTimeout, why)
			return 2
		} else if !everWelcomed && delay > left {
			delay = left // one last attempt when the time is up
		}
		logger.Printf("the stream ended (%s); reconnecting in %.1f s", why, delay.Seconds())
		select {
		case <-time.After(delay):
		case <-b.stop:
			logger.Printf("stopped after %d match(es)", len(b.ended))
			return 0
		}
	}
}

// item is one message of the stream, or how it ended.
type item struct {
	msg *pb.PlayResponse
	err error
}

// session opens one Play stream and plays on it until it ends.
func (b *bot) session(deadline time.Time) (e ending) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !deadline.IsZero() { // not welcomed by then: cancel, whatever the call is doing
		giveUp := time.AfterFunc(time.Until(deadline), cancel)
		defer giveUp.Stop()
	}
	opened := make(chan struct{})
	go func() { // a stop while the stream is still being opened cancels the attempt
		select {
		case <-b.stop:
			select {
			case <-opened:
			default:
				cancel()
			}
		case <-opened:
		}
	}()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+b.token)
	stream, err := b.client.Play(ctx)
	close(opened)
	if err != nil {
		return ending{err: err}
	}
	// Send errors are ignored: a broken stream's status comes from Recv.
	_ = stream.Send(&pb.PlayRequest{Message: &pb.PlayRequest_Hello{
		Hello: &pb.Hello{AskForced: b.askForced, Client: clientName}}})

	// Recv on a goroutine of its own; this one decides and sends (gRPC allows one of each).
	items := make(chan item, 64)
	go func() {
		for {
			msg, err := stream.Recv()
			select {
			case items <- item{msg, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var pending []*pb.DecisionRequest // received and not void, to answer
	stop := b.stop
	var closeTimer <-chan time.Time
	for {
		var it item
		select {
		case it = <-items:
		case <-stop: // SIGINT, SIGTERM or -matches: half-close, the server ends the call OK
			stop, pending = nil, nil
			_ = stream.CloseSend()
			closeTimer = time.After(closeGrace)
			continue
		case <-closeTimer: // it did not: cancel the call
			cancel()
			continue
		}
		// Take every message already here before answering: a withdrawal, a newer request
		// or the match's end in the backlog voids older requests, never to be answered.
	drain:
		for {
			if it.err != nil {
				e.err = it.err
				return e
			}
			pending = b.handle(it.msg, &e, pending)
			select {
			case it = <-items:
			default:
				break drain
			}
		}
		if stop == nil {
			continue // closing: nothing more is sent
		}
		for _, d := range pending {
			// A random legal action: a play on an end, defer, redeal or keep alike.
			a := d.LegalActions[b.rng.Intn(len(d.LegalActions))]
			_ = stream.Send(&pb.PlayRequest{Message: &pb.PlayRequest_Action{Action: &pb.ActionReply{
				Match: d.Match, TurnId: d.TurnId, ActionId: a.Id}}})
		}
		pending = pending[:0]
	}
}

// handle applies one message; returns the requests still to answer.
func (b *bot) handle(msg *pb.PlayResponse, e *ending, pending []*pb.DecisionRequest) []*pb.DecisionRequest {
	// voids drops the pending requests of match up to turn (all of them: ^0).
	voids := func(match string, turn uint64) {
		kept := pending[:0]
		for _, d := range pending {
			if d.Match != match || d.TurnId > turn {
				kept = append(kept, d)
			}
		}
		pending = kept
	}
	switch m := msg.Message.(type) {
	case *pb.PlayResponse_Welcome:
		e.welcomed = true
		logger.Printf("connected to %s as %s (server %s)", b.server, m.Welcome.Principal, m.Welcome.ServerVersion)
	case *pb.PlayResponse_Decision:
		d := m.Decision
		if b.ended[d.Match] || d.TurnId <= b.withdrawn[d.Match] || d.TurnId < b.latest[d.Match] ||
			len(d.LegalActions) == 0 {
			break // void already: never answered
		}
		b.latest[d.Match] = d.TurnId
		voids(d.Match, d.TurnId-1) // older requests of the match are over
		pending = append(pending, d)
	case *pb.PlayResponse_DecisionWithdrawn:
		w := m.DecisionWithdrawn
		if w.TurnId > b.withdrawn[w.Match] {
			b.withdrawn[w.Match] = w.TurnId
		}
		voids(w.Match, w.TurnId)
		if w.Reason == pb.WithdrawalReason_WITHDRAWAL_REASON_TIMED_OUT ||
			w.Reason == pb.WithdrawalReason_WITHDRAWAL_REASON_ILLEGAL_ACTIONS {
			logger.Printf("%s turn %d withdrawn: %s", w.Match, w.TurnId, w.Reason)
		}
	case *pb.PlayResponse_MatchEnded:
		name := m.MatchEnded.Match
		voids(name, ^uint64(0))
		delete(b.latest, name)
		delete(b.withdrawn, name)
		if !b.ended[name] { // one MatchEnded per seat: one line per match
			b.ended[name] = true
			logger.Printf("%s ended: %s", name, outcomeText(m.MatchEnded.Outcome))
			if b.max > 0 && len(b.ended) >= b.max {
				b.halt(fmt.Sprintf("%d match(es) ended: closing the stream", len(b.ended)))
			}
		}
	case *pb.PlayResponse_Error: // an answer to one ActionReply: the stream stays open
		st := status.FromProto(m.Error) // a google.rpc.Status
		logger.Printf("server error: %s", describe(st))
		if reasonOf(st) == pb.ErrorReason_STREAM_REPLACED.String() {
			e.replaced = true
		}
	case *pb.PlayResponse_Stopping:
		e.stopping = true
		logger.Printf("the server is stopping: %s", m.Stopping.Reason)
	}
	return pending
}

// reasonOf returns the ErrorInfo reason of a status ("" without one).
func reasonOf(st *status.Status) string {
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

// describe says a status as the docs do: "UNAVAILABLE / SHUTTING_DOWN: the message".
func describe(st *status.Status) string {
	name := map[codes.Code]string{codes.OK: "OK", codes.Canceled: "CANCELLED"}[st.Code()]
	if name == "" { // "FailedPrecondition" -> "FAILED_PRECONDITION"
		var sb strings.Builder
		for i, r := range st.Code().String() {
			if i > 0 && r >= 'A' && r <= 'Z' {
				sb.WriteByte('_')
			}
			sb.WriteRune(r)
		}
		name = strings.ToUpper(sb.String())
	}
	if reason := reasonOf(st); reason != "" {
		name += " / " + reason
	}
	if st.Message() != "" {
		name += ": " + st.Message()
	}
	return name
}

// outcomeText: "NORMAL, side 1 won (44-105): side 1 reached 105 of 100".
func outcomeText(o *pb.Outcome) string {
	if o == nil {
		return "no outcome"
	}
	winner := "no winner"
	if o.Winner != nil {
		winner = fmt.Sprintf("side %d won", *o.Winner)
	}
	scores := make([]string, len(o.Scores))
	for i, s := range o.Scores {
		scores[i] = fmt.Sprint(s)
	}
	return fmt.Sprintf("%s, %s (%s): %s", strings.TrimPrefix(o.Termination.String(), "TERMINATION_"),
		winner, strings.Join(scores, "-"), o.Reason)
}
