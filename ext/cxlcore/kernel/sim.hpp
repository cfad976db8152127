// The simulation kernel every model uses: time, the one message type and its
// pool, components and their port protocol, the event loop and watchdog,
// timed queues and random numbers.
#pragma once

#include "cxlcore/kernel/component.hpp"
#include "cxlcore/kernel/event_loop.hpp"
#include "cxlcore/kernel/queues.hpp"
#include "cxlcore/kernel/rng.hpp"
#include "cxlcore/kernel/time.hpp"
#include "cxlcore/kernel/txn.hpp"
#include "cxlcore/kernel/watchdog.hpp"
