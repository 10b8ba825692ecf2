#!/usr/bin/perl
# A capicua bot in Perl for the stdio bridge (JSON::PP ships with Perl):
#   capicua bot stdio -- perl clients/stdio/random_bot.pl
# One JSON decision request per line on stdin; one JSON answer per line on stdout.
use strict;
use warnings;
use JSON::PP;

$| = 1;    # flush every answer at once: the bridge waits for it
my $json = JSON::PP->new->utf8;
srand($ENV{BOT_SEED}) if defined $ENV{BOT_SEED};
while (my $line = <STDIN>) {
    my $request = $json->decode($line);
    my @legal   = @{ $request->{legal_actions} };
    my $pick    = $legal[ int(rand(@legal)) ];          # a random legal action
    my $hand    = join ' ', @{ $request->{view}{tiles} };
    print STDERR "turn $request->{turn_id}: hand $hand, playing $pick->{text}\n"
      if $ENV{BOT_VERBOSE};                             # logs go to stderr, never stdout
    print $json->encode({ action_id => $pick->{id} }), "\n";
}
