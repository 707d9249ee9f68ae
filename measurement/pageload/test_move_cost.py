"""move_cost.timeline on a server qlog written here in ngtcp2's JSON-SEQ form: the request,
data on the old path, a PATH_CHALLENGE (the move), the PATH_RESPONSE, data after. No root."""
import json
import os
import tempfile
import unittest

from measurement.pageload import move_cost


def ev(t, name, **data):
    return {"time": t, "name": name, "data": data}


def sent(t, length, frames):
    return ev(t, "transport:packet_sent", frames=frames, header={"packet_type": "1RTT"},
              raw={"length": length})


def received(t, frames):
    return ev(t, "transport:packet_received", frames=frames, header={"packet_type": "1RTT"},
              raw={"length": 60})


def stream(sid, n):
    return {"frame_type": "stream", "stream_id": sid, "offset": 0, "length": n}


def write_qlog(events):
    fd, path = tempfile.mkstemp(suffix=".sqlog")
    with os.fdopen(fd, "w") as f:
        f.write("\x1e" + json.dumps({"qlog_format": "JSON-SEQ", "trace": {}}) + "\n")
        for e in events:
            f.write("\x1e" + json.dumps(e) + "\n")
        f.write("\x1e{\"time\": 999, \"name\": \"transport:packet_se")  # cut short at exit
    return path


class TimelineTest(unittest.TestCase):
    def timeline_of(self, events):
        """move_cost.timeline of these events, read back from a qlog file as the tool does."""
        path = write_qlog(events)
        self.addCleanup(os.unlink, path)
        return move_cost.timeline(move_cost.read_qlog(path))

    def test_a_moved_connection(self):
        events = [
            received(10, [stream(2, 18)]),                     # a control stream: not the request
            sent(11, 1200, [stream(3, 20)]),
            ev(12, "recovery:metrics_updated", congestion_window=14520, smoothed_rtt=333),
            received(100, [stream(0, 300)]),                   # the request
            sent(101, 1452, [stream(0, 1400)]),
            sent(102, 1452, [stream(0, 1400)]),
            ev(130, "recovery:metrics_updated", congestion_window=30000, smoothed_rtt=80),
            sent(180, 1200, [{"frame_type": "path_challenge"}, stream(0, 100)]),
            ev(180, "recovery:metrics_updated", congestion_window=12000, smoothed_rtt=333),
            sent(200, 300, [stream(0, 200)]),
            received(260, [{"frame_type": "path_response"}]),
            sent(261, 1200, [stream(0, 1100)]),
            sent(300, 1452, [stream(0, 1400)]),
        ]
        t = self.timeline_of(events)
        self.assertEqual(t["first_data_ms"], 1)
        self.assertEqual(t["move_ms"], 80)
        self.assertEqual(t["validated_ms"], 160)
        self.assertEqual(t["last_data_ms"], 200)
        self.assertEqual(t["kb_before_move"], 2.8)
        self.assertEqual(t["kb_validating"], 0.3)
        self.assertEqual(t["kb_total"], 5.6)
        self.assertEqual((t["cwnd_before"], t["cwnd_after"]), (30000, 12000))
        self.assertEqual((t["srtt_before"], t["srtt_after"]), (80, 333))
        self.assertEqual((t["size_before"], t["size_after"]), (1452, 1200))

    def test_a_flight_paced_at_the_reset_rtt(self):
        # The response waits for the validation, leaves in one flight while the estimate is
        # still the reset 333 ms, and the next packet leaves only ~270 ms later.
        events = [
            received(100, [stream(0, 300)]),
            sent(101, 1200, [stream(0, 1100)]),
            sent(180, 1200, [{"frame_type": "path_challenge"}]),
            ev(180, "recovery:metrics_updated", congestion_window=14720, smoothed_rtt=333),
            received(260, [{"frame_type": "path_response"}]),
            sent(261, 1452, [stream(0, 1400)]),
            sent(262, 1452, [stream(0, 1400)]),
            ev(280, "recovery:metrics_updated", latest_rtt=78, smoothed_rtt=78),
            sent(530, 1452, [stream(0, 1400)]),
            sent(531, 1452, [stream(0, 1400)]),
        ]
        t = self.timeline_of(events)
        self.assertEqual(t["rtt_sample_ms"], 180)
        self.assertEqual(t["srtt_native"], 333)
        self.assertEqual((t["stall_ms"], t["stall_at_ms"]), (268, 162))

    def test_a_connection_that_stayed(self):
        t = self.timeline_of([received(5, [stream(0, 300)]), sent(6, 1452, [stream(0, 1400)]),
                              sent(9, 1452, [stream(0, 900)])])
        self.assertEqual(t, {"first_data_ms": 1, "last_data_ms": 4, "kb_total": 2.3})

    def test_no_request_no_timeline(self):
        self.assertIsNone(self.timeline_of([received(5, [stream(2, 18)]),
                                            sent(6, 1200, [stream(3, 20)])]))


if __name__ == "__main__":
    unittest.main()
