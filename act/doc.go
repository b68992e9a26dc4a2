// Package act provides Actor, the plain embeddable actor: embed it in your
// type, override the callbacks you need (Init, HandleMessage, HandleCall,
// Terminate, HandleInspect), and spawn a factory returning a pointer to your
// type. Actor implements gen.ProcessBehavior: it drains the mailbox in
// priority order (exit signals, then down messages and inspection, then
// ordinary messages and requests) and calls your callbacks one at a time on
// the process's goroutine.
//
// Callers must know:
//  1. Your type must embed Actor and be spawned as a pointer; the runtime
//     hands Actor the process in ProcessInit, so a.Send, a.PID(), a.Log()
//     and the other gen.Process methods work from Init on.
//  2. HandleCall answers by returning a non-nil result. Returning (nil, nil)
//     means "I will answer later with SendResponse". A returned error that is
//     a gen.TerminateReason* ends the process; any other error goes back to
//     the caller as the Call's error and the actor lives on (ergo instead
//     terminates the process on any error).
//  3. HandleMessage returning a non-nil error terminates the process with it.
//  4. An exit signal terminates the actor with its reason unless SetTrapExit
//     is on, in which case it arrives in HandleMessage as a gen.MessageExit*
//     value. An exit from the parent and Node.Kill are never trapped.
//  5. Down messages from monitors arrive in HandleMessage as gen.MessageDown*.
//  6. The default callbacks log what they did not handle at Warning; the
//     default HandleCall answers gen.ErrUnsupported.
package act
