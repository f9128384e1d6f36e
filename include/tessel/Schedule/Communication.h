//===- Communication.h - Sends and receives for a compute order -*- C++ -*-===//
//
// Generators and hand-written files may give only the compute order of each
// rank; insertCommunication() adds the sends and receives that carry
// activations (SEND_F/RECV_F) and gradients (SEND_B/RECV_B) between ranks.
//
// Placement: the compute order is run once with unit costs (F = B = W = 1,
// BW = 2, free transfers). Each message happens at the instant its producer
// ends; every rank lists its messages in (instant, tag) order, before any
// compute that starts at or after that instant. All ranks thus follow one
// global order of messages, so the result cannot deadlock under blocking
// send/recv, sends come right after their producer, and receives are posted
// no later than the consumer needs them.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_SCHEDULE_COMMUNICATION_H
#define TESSEL_SCHEDULE_COMMUNICATION_H

#include "tessel/Schedule/Schedule.h"

namespace tessel::pipeline {

/// Adds sends and receives to a schedule that has none. The compute order
/// must be valid (verify() first); fails otherwise.
llvm::Error insertCommunication(Schedule &s);

/// What every schedule goes through before use, whether generated or loaded:
/// verify; if it lists no sends and receives, insert them; verify again.
llvm::Expected<Schedule> finalizeSchedule(Schedule s);

} // namespace tessel::pipeline

#endif // TESSEL_SCHEDULE_COMMUNICATION_H
