// Application events that their daemon reports only when asked (wire Command.unwatched; fedcld's
// unreported_events.h). Most events an application asks for are never looked at: PyOpenCL returns
// one from every enqueue and a loop drops it. A report costs the daemon a watch and the client a
// notice per command, and events cost tiny kernels half their rate on two cores (2026-12-01). So an
// event of a command that does not block, on a queue without profiling, is reported only once the
// application waits for it (clWaitForEvents, a blocking call behind it), asks its status, sets a
// callback on it, or a command of another daemon waits for it. Until then it completes at its queue's
// clFinish, with the failures the daemon found among them (Reply.finished).
#pragma once

#include <vector>

#include "handles.h"

namespace fedcl {

// The command of event has left for its daemon, unwatched: the event completes at the queue's next
// clFinish, unless it is asked about first.
void note_unreported(_cl_event *event);

// Asks the event's daemon to report it, once. ask_status also waits for the daemon's answer, after
// which the event's status here is as current as the daemon's (clGetEventInfo).
void ask_completion(_cl_event *event);
void ask_status(_cl_event *event);
// ask_completion's request, queued for the caller to flush (event->connection); false if none was needed.
bool queue_completion_ask(_cl_event *event);

// The application let go of the event without asking about it: nothing waits for its completion.
void forget_unreported(_cl_event *event);
// The application let go of the queue: no clFinish will come. (An event it still holds is reported
// once waited for or asked about.)
void drop_unreported(cl_command_queue queue);

// clFinish on queue: the events it completes, taken before its request leaves; then, with its reply
// (status: the request's outcome), completed.
std::vector<_cl_event *> take_unreported(cl_command_queue queue);
void complete_unreported(cl_command_queue queue, std::vector<_cl_event *> &events, PendingReply &reply);

}  // namespace fedcl
