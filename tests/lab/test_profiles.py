"""Profile arithmetic and the profile file (no root): every profile loads, its spoke
delays reproduce its three RTTs, bad profiles are refused with the reason."""
import os
import tempfile
import unittest

from lab.qslab_lib import profiles
from lab.qslab_lib.shell import LabError


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    f.write(text)
    f.close()
    return f.name


class ProfilesTest(unittest.TestCase):
    def test_every_profile_loads_and_reproduces_its_rtts(self):
        names = profiles.load_all()
        self.assertIn("default", names)
        for name in names:
            p = profiles.load(name)
            l = p.links
            dc, dp, ds = l["isp"].delay_ms, l["provider"].delay_ms, l["srv1"].delay_ms
            self.assertAlmostEqual(2 * (dc + dp), p.rtt_ms["client_provider"], msg=name)
            self.assertAlmostEqual(2 * (dp + ds), p.rtt_ms["provider_server"], msg=name)
            self.assertAlmostEqual(2 * (dc + ds), p.rtt_ms["client_server"], msg=name)
            self.assertEqual(l["dns"].delay_ms, ds, name)

    def test_paper_channel_rates_are_there(self):
        rates = {profiles.load(n).channel_rate_mbit for n in profiles.load_all()}
        self.assertTrue({0.0, 1.0, 5.0, 10.0} <= rates, rates)

    def test_channel_rate_override(self):
        self.assertEqual(profiles.load("london-ohio", 1).channel_rate_mbit, 1.0)
        self.assertEqual(profiles.load("london-ohio", 0).channel_rate_mbit, 0.0)
        with self.assertRaisesRegex(LabError, "`-1'"):
            profiles.load("default", -1)

    def test_refuses_bad_profiles_with_the_reason(self):
        cases = {
            "[profiles.x]\nclient_provider_rtt_ms = 10\nprovider_server_rtt_ms = 100\n"
            "client_server_rtt_ms = 10\n": "triangle inequality",
            "[profiles.x]\nclient_provider_rtt_ms = -4\n": "bad value for client_provider_rtt_ms: `-4'",
            "[profiles.x]\nclient_provider_rtt_ms = \"ten\"\n": "bad value",
            "[profiles.x]\ndelay_ms = 3\n": "unknown key `delay_ms'",
            "[profiles.x]\nloss = 1\n": "loss must be below 1",
            "[profiles.x\n": r"\.toml: Expected",
        }
        for text, reason in cases.items():
            path = write(text)
            try:
                with self.assertRaisesRegex(LabError, reason, msg=text):
                    profiles.load("x", path=path)
            finally:
                os.unlink(path)

    def test_unknown_profile_names_the_known_ones(self):
        with self.assertRaisesRegex(LabError, "unknown profile `nope'.*default"):
            profiles.load("nope")


if __name__ == "__main__":
    unittest.main(verbosity=2)
